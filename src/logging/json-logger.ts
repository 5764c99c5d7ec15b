import { LoggerService } from '@nestjs/common';
import { LogFormat, LogLevel } from '../config/gateway-config';

const LEVEL_RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };
type NestLevel = 'error' | 'warn' | 'log' | 'debug' | 'verbose' | 'fatal';
const FROM_NEST: Record<NestLevel, LogLevel> = {
  fatal: 'error',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'debug',
};

/** Nest's own start-up chatter: written at debug, not info. */
const FRAMEWORK_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'WebSocketsController',
  'NestFactory',
  'NestApplication',
]);

/**
 * Nest's names of the levels LOG_LEVEL `level` writes, for Logger.overrideLogger:
 * with them set, `Logger.isLevelEnabled('log')` lets a hot path skip building a
 * line that would be dropped (STYLE B9).
 */
export function nestLevelsOf(level: LogLevel): NestLevel[] {
  return (Object.keys(FROM_NEST) as NestLevel[]).filter((nest) => LEVEL_RANK[FROM_NEST[nest]] <= LEVEL_RANK[level]);
}

/** Where lines go; tests pass their own sink to read the output. */
export type LogSink = (line: string) => void;

/**
 * Nest LoggerService writing one JSON object per line (SPEC §10). Callers log
 * ids, methods, statuses and sizes only; this class never sees bodies.
 * A message may be a string or a plain object of fields.
 */
export class JsonLogger implements LoggerService {
  private readonly maxRank: number;

  constructor(
    level: LogLevel,
    private readonly format: LogFormat,
    private readonly sink: LogSink = (line) => process.stdout.write(line + '\n'),
  ) {
    this.maxRank = LEVEL_RANK[level];
  }

  log(message: unknown, ...rest: unknown[]): void {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  private write(nestLevel: NestLevel, message: unknown, rest: unknown[]): void {
    // Nest passes the context last; an error's stack comes before it.
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const level =
      nestLevel === 'log' && context !== undefined && FRAMEWORK_CONTEXTS.has(context) ? 'debug' : FROM_NEST[nestLevel];
    if (LEVEL_RANK[level] > this.maxRank) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, context };
    if (typeof message === 'object' && message !== null && !(message instanceof Error)) Object.assign(entry, message);
    else entry.msg = message instanceof Error ? message.message : String(message);
    if (typeof rest[0] === 'string' && rest[0].includes('\n')) entry.stack = rest[0];
    this.sink(this.format === 'json' ? JSON.stringify(entry) : pretty(entry));
  }
}

function pretty(entry: Record<string, unknown>): string {
  const { time, level, context, msg, ...fields } = entry;
  const extra = Object.keys(fields).length > 0 ? ' ' + JSON.stringify(fields) : '';
  return `${String(time)} ${String(level).toUpperCase().padEnd(5)} [${String(context ?? '-')}] ${String(msg ?? '')}${extra}`;
}
