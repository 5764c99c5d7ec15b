import { ExecutionContext, createParamDecorator } from '@nestjs/common';
import type { Request } from 'express';
import { BackendApiError } from './backend-api.error';
import { incompleteBody } from './client-fault';

/** The request body as read from the socket: null when there is none. */
export interface RawBody {
  readonly bytes: Buffer | null;
  readonly contentType: string | undefined;
}

/**
 * Hands the request to the body pipes, which read it with the SPEC limits
 * (Express's body parser is off, STYLE B12).
 */
export const RequestBody = createParamDecorator((_: unknown, ctx: ExecutionContext): Request =>
  ctx.switchToHttp().getRequest<Request>(),
);

/** Read the whole body; 413 when Content-Length or the bytes read exceed `limitBytes` (SPEC §5). */
export function readBody(req: Request, limitBytes: number): Promise<RawBody> {
  const contentType = req.headers['content-type'];
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limitBytes) return Promise.reject(new BackendApiError(413));
  // RFC 9112 §6.3: without Content-Length and Transfer-Encoding a request has no body; nothing to wait for
  // (the endpoints without a body, e.g. subscribe, are the most called). Node discards an unread stream.
  if ((declared === undefined || declared === '0') && req.headers['transfer-encoding'] === undefined)
    return Promise.resolve({ bytes: null, contentType });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limitBytes) return void chunks.push(chunk);
      req.off('data', onData);
      reject(new BackendApiError(413));
    };
    req.on('data', onData);
    req.on('end', () =>
      resolve({
        bytes: size === 0 ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size),
        contentType,
      }),
    );
    // SPEC §5: a body cut off, malformed or abandoned is the client's fault (400), never a 500.
    // (Node emits 'error' on an aborted request only when it has a listener: this one.)
    req.on('error', () => reject(incompleteBody()));
  });
}
