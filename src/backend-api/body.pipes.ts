import { Injectable, PipeTransform } from '@nestjs/common';
import type { Request } from 'express';
import { GatewayConfig } from '../config/gateway-config';
import { parseLatticeBody, LatticeBody } from '../lattice/lattice-body';
import { isValidUserId } from '../protocol/identifiers';
import { BackendApiError, badRequest } from './backend-api.error';
import { BatchCommand, parseBatchEnvelope } from './batch-envelope';
import { RawBody, readBody } from './raw-body';

/**
 * Deepest lattice content accepted (body root = 1). Deeper values (a `_register`
 * holding `[[[[…]]]]` a few thousand levels deep) overflowed the stack in the
 * CRDT merge / frame encoding: a RangeError and a 500 instead of a 400.
 */
export const MAX_LATTICE_DEPTH = 128;

const JSON_CONTENT_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Endpoints 1, 2, 5, 9: a body is a 400 (SPEC §5). */
@Injectable()
export class NoBodyPipe implements PipeTransform<Request, Promise<void>> {
  constructor(private readonly config: GatewayConfig) {}

  async transform(req: Request): Promise<void> {
    checkNoBody((await readBody(req, this.config.limits.maxPayloadBytes)).bytes !== null);
  }
}

/** The raw JSON bytes of the body after the SPEC §5 checks; the value is parsed once. */
export interface JsonBody {
  readonly bytes: Buffer;
  readonly value: unknown;
}

/** Endpoints 3, 4, 6, 7, 8: body required, `application/json` (utf-8), valid JSON. */
@Injectable()
export class JsonBodyPipe implements PipeTransform<Request, Promise<JsonBody>> {
  constructor(private readonly config: GatewayConfig) {}

  async transform(req: Request): Promise<JsonBody> {
    return jsonBodyOf(await readBody(req, this.config.limits.maxPayloadBytes));
  }
}

/** Endpoints 4 and 6: JSON body that is valid lattice content (SPEC §6.4). */
@Injectable()
export class LatticeBodyPipe implements PipeTransform<Request, Promise<LatticeBody>> {
  constructor(private readonly json: JsonBodyPipe) {}

  async transform(req: Request): Promise<LatticeBody> {
    return latticeBodyOf((await this.json.transform(req)).value);
  }
}

/** Endpoints 7 and 8: a JSON array of valid user ids. */
@Injectable()
export class UserListPipe implements PipeTransform<Request, Promise<string[]>> {
  constructor(private readonly json: JsonBodyPipe) {}

  async transform(req: Request): Promise<string[]> {
    return userListOf((await this.json.transform(req)).value);
  }
}

/** `POST /v1/batch`: a JSON body (as endpoint 3's) holding a valid envelope (SPEC §5). */
@Injectable()
export class BatchBodyPipe implements PipeTransform<Request, Promise<BatchCommand[]>> {
  constructor(
    private readonly json: JsonBodyPipe,
    private readonly config: GatewayConfig,
  ) {}

  async transform(req: Request): Promise<BatchCommand[]> {
    return parseBatchEnvelope((await this.json.transform(req)).value, this.config.limits.batchMaxCommands);
  }
}

/*
 * The checks below are the pipes' own, shared with POST /v1/batch, whose
 * commands carry already parsed JSON bodies (SPEC §5: checked exactly as the
 * single endpoint would be).
 */

/** Endpoints 1, 2, 5, 9: 400 when a body is present. */
export function checkNoBody(hasBody: boolean): void {
  if (hasBody) throw badRequest('unexpected_body', 'this endpoint takes no request body');
}

/** Endpoints 3, 4, 6, 7, 8 without a body. */
export const missingBody = (): BackendApiError => badRequest('missing_body', 'a JSON request body is required');

/** Endpoints 4 and 6: lattice content (SPEC §6.4) of a parsed JSON body, else 400. */
export function latticeBodyOf(value: unknown): LatticeBody {
  if (nestedDeeperThan(value, MAX_LATTICE_DEPTH))
    throw badRequest('invalid_lattice', `body: nested deeper than ${MAX_LATTICE_DEPTH} levels`);
  const result = parseLatticeBody(value);
  if (!result.ok) throw badRequest('invalid_lattice', result.message);
  return result.value;
}

/** Endpoints 7 and 8: a parsed JSON body that is an array of valid user ids, else 400. */
export function userListOf(value: unknown): string[] {
  if (!Array.isArray(value)) throw badRequest('invalid_users', 'body must be a JSON array of user ids');
  const at = value.findIndex((userId) => !isValidUserId(userId));
  if (at >= 0) throw badRequest('invalid_users', `[${at}]: user id must be a string matching [A-Za-z0-9:_/-]{1,256}`);
  return value as string[];
}

function jsonBodyOf(body: RawBody): JsonBody {
  if (body.bytes === null) throw missingBody();
  if (body.contentType === undefined || !JSON_CONTENT_TYPE.test(body.contentType.trim())) {
    throw badRequest('unsupported_content_type', 'Content-Type must be application/json (charset utf-8 if any)');
  }
  let text: string;
  try {
    text = utf8.decode(body.bytes);
  } catch {
    throw badRequest('invalid_json', 'body is not valid UTF-8');
  }
  try {
    // TextDecoder drops a BOM; drop it from the bytes too, since they are spliced into frames.
    const bytes = hasBom(body.bytes) ? body.bytes.subarray(3) : body.bytes;
    return { bytes, value: JSON.parse(text) };
  } catch (err) {
    throw badRequest('invalid_json', 'body is not valid JSON: ' + (err as Error).message);
  }
}

/** Whether arrays/objects nest deeper than `limit` levels; iterative, so any depth is safe to ask about. */
function nestedDeeperThan(root: unknown, limit: number): boolean {
  const pending: Array<[unknown, number]> = [[root, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, depth] = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(value) ? value : Object.values(value)) pending.push([child, depth + 1]);
  }
  return false;
}

function hasBom(bytes: Buffer): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}
