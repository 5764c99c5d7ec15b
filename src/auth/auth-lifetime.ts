import type { AuthLifetimeSettings } from '../config/gateway-config';
import { UpstreamResponse, errorBodyJson } from '../upstream/upstream-response';
import { AuthOutcome, authOutcome } from './auth-response';

/** SPEC §14: the header of the authorization answer that sets its lifetime, in seconds. */
export const AUTH_TTL_HEADER = 'gateway-auth-ttl';
/** SPEC §14: largest `Gateway-Auth-TTL` (one year of 365 days). */
export const MAX_AUTH_TTL_SECONDS = 31_536_000;
const DIGITS = /^[0-9]{1,8}$/;

/** The header read: its seconds (null = absent), or why it makes the answer invalid. */
export type AuthTtl = { readonly ok: true; readonly seconds: number | null } | { readonly ok: false; reason: string };

/**
 * SPEC §14: `Gateway-Auth-TTL` as Node gives it (undefined when absent).
 * Valid: digits only, 1 to 31,536,000. Anything else (a sign, a fraction,
 * spaces inside, an empty value, the header sent twice) is invalid.
 */
export function parseAuthTtl(value: string | string[] | undefined): AuthTtl {
  if (value === undefined) return { ok: true, seconds: null };
  const text = typeof value === 'string' ? value.trim() : null;
  const seconds = text !== null && DIGITS.test(text) ? Number(text) : 0;
  if (seconds < 1 || seconds > MAX_AUTH_TTL_SECONDS)
    return { ok: false, reason: `Gateway-Auth-TTL is not a whole number of seconds from 1 to ${MAX_AUTH_TTL_SECONDS}` };
  return { ok: true, seconds };
}

/**
 * The lifetime in ms of an authorization whose header said `seconds` (null:
 * none): the header, else AUTHORIZATION_TTL, capped by AUTHORIZATION_MAX_TTL.
 * 0 = unlimited (no header and AUTHORIZATION_TTL 0, and no cap).
 */
export function lifetimeMsOf(seconds: number | null, settings: AuthLifetimeSettings): number {
  const asked = seconds === null ? settings.defaultTtlMs : seconds * 1000;
  if (settings.maxTtlMs === 0) return asked;
  return asked === 0 ? settings.maxTtlMs : Math.min(asked, settings.maxTtlMs);
}

/** An authorization (or refresh) answer with the lifetime it sets; a bad `Gateway-Auth-TTL` made it a failure. */
export type LivedAuthOutcome =
  (AuthOutcome & { readonly ok: false }) | (AuthOutcome & { ok: true; lifetimeMs: number });

/** SPEC §3 and §14: the answer's identity and lifetime, or why it is invalid (S=500 for a bad header). Never throws. */
export function livedAuthOutcome(response: UpstreamResponse, settings: AuthLifetimeSettings): LivedAuthOutcome {
  const outcome = authOutcome(response);
  if (!outcome.ok) return outcome;
  const ttl = parseAuthTtl(response.kind === 'response' ? response.headers?.[AUTH_TTL_HEADER] : undefined);
  if (!ttl.ok) return { ok: false, status: 500, dataJson: 'null', reason: ttl.reason };
  return { ...outcome, lifetimeMs: lifetimeMsOf(ttl.seconds, settings) };
}

/**
 * SPEC §14: when to refresh, in ms from the start of a lifetime: at 90% of
 * it, spread by ±5% of it. `random` is in [0, 1).
 */
export function refreshDelayMs(lifetimeMs: number, random: number): number {
  return Math.round(lifetimeMs * (0.85 + 0.1 * random));
}

/** SPEC §14: the wait before retry number `attempt` (1, 2, …): 500 ms, then doubling, at most 10 s. */
export function retryDelayMs(attempt: number): number {
  return Math.min(10_000, 500 * 2 ** Math.min(attempt - 1, 5));
}

/** A refresh answer, mapped (SPEC §14). */
export type RefreshOutcome =
  | { readonly kind: 'ok'; readonly lifetimeMs: number }
  | { readonly kind: 'changed'; readonly lifetimeMs: number; readonly identityJson: string }
  | { readonly kind: 'refused'; readonly status: number; readonly dataJson: string; readonly reason: string }
  | { readonly kind: 'failed'; readonly reason: string };

/** SPEC §14: the statuses that end a session at once (the backend refuses the refresh). */
const REFUSING_STATUSES = new Set([401, 403, 404, 410]);
/**
 * SPEC §14 names no S for a valid object of another user: 403 (the backend
 * no longer lets this connection's user in), with no data.
 */
export const ANOTHER_USER_STATUS = 403;

/**
 * SPEC §14: map the answer to a refresh of `userId`, whose identity JSON is
 * `currentJson`. A refusal (401, 403, 404, 410, another user) ends the
 * session; anything else that is not a valid answer for the same user is a
 * failure to retry. Never throws.
 */
export function refreshOutcome(
  response: UpstreamResponse,
  userId: string,
  currentJson: string,
  settings: AuthLifetimeSettings,
): RefreshOutcome {
  if (response.kind === 'response' && REFUSING_STATUSES.has(response.status))
    return { kind: 'refused', status: response.status, dataJson: errorBodyJson(response), reason: 'refused' };
  const outcome = livedAuthOutcome(response, settings);
  if (!outcome.ok) return { kind: 'failed', reason: outcome.reason };
  const identity = outcome.identity;
  if (identity.userId !== userId)
    return { kind: 'refused', status: ANOTHER_USER_STATUS, dataJson: 'null', reason: 'another user' };
  if (identity.json === currentJson) return { kind: 'ok', lifetimeMs: outcome.lifetimeMs };
  return { kind: 'changed', lifetimeMs: outcome.lifetimeMs, identityJson: identity.json };
}
