import { CLOSE_INVALID_PAYLOAD, CLOSE_MESSAGE_TOO_BIG, CLOSE_UNSUPPORTED_DATA } from './close-codes';

/** A frame that cannot be a call at all: answered with fatal_error, then closed (SPEC §4.1). */
export interface FrameFault {
  readonly kind: 'frame_fault';
  readonly closeCode: typeof CLOSE_INVALID_PAYLOAD | typeof CLOSE_UNSUPPORTED_DATA | typeof CLOSE_MESSAGE_TOO_BIG;
  readonly text: string;
}

/** A well-shaped call with a bad method or request id: answered with an `error` frame (SPEC §4.1). */
export interface CallFault {
  readonly kind: 'call_fault';
  readonly text: string;
}

export function frameFault(closeCode: FrameFault['closeCode'], text: string): FrameFault {
  return { kind: 'frame_fault', closeCode, text };
}

export function callFault(text: string): CallFault {
  return { kind: 'call_fault', text };
}
