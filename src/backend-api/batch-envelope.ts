import { badRequest } from './backend-api.error';

/** Methods a batch command may use (SPEC §5). */
export const BATCH_METHODS = ['PUT', 'DELETE', 'POST'] as const;
export type BatchMethod = (typeof BATCH_METHODS)[number];

/** One command of `POST /v1/batch`, its body already parsed with the envelope. */
export interface BatchCommand {
  readonly method: BatchMethod;
  /** Starts with `/v1/`; may carry a query, ignored like the single endpoint's. */
  readonly path: string;
  /** Whether the command has a `body` key (a JSON `null` is a body). */
  readonly hasBody: boolean;
  readonly body: unknown;
}

/** One entry of the answer: the status (and 400 body) the single endpoint would have given. */
export interface BatchResult {
  readonly status: number;
  readonly error?: string;
  readonly message?: string;
}

const BATCH_PATH = /^\/v1\/batch(?:[?#]|$)/;

/**
 * The SPEC §5 envelope `{"commands": [{method, path, body?}, …]}` with 1 to
 * `maxCommands` commands; anything else is a 400 for the whole batch, naming
 * where (`commands[3].method: …`). Unknown keys are ignored.
 */
export function parseBatchEnvelope(value: unknown, maxCommands: number): BatchCommand[] {
  if (!isObject(value)) throw invalid('body must be an object {"commands": [...]}');
  const commands = value.commands;
  if (!Array.isArray(commands) || commands.length === 0)
    throw invalid(`commands: must be an array of 1 to ${maxCommands} commands`);
  if (commands.length > maxCommands)
    throw badRequest(
      'too_many_commands',
      `commands: ${commands.length} commands, at most ${maxCommands} (BATCH_MAX_COMMANDS) in one batch`,
    );
  return commands.map((command, i) => commandOf(command, i));
}

function commandOf(command: unknown, i: number): BatchCommand {
  if (!isObject(command)) throw invalid(`commands[${i}]: must be an object {"method", "path", "body"?}`);
  const { method, path } = command;
  if (typeof method !== 'string' || !(BATCH_METHODS as readonly string[]).includes(method))
    throw invalid(`commands[${i}].method: must be "PUT", "DELETE" or "POST"`);
  if (typeof path !== 'string' || !path.startsWith('/v1/'))
    throw invalid(`commands[${i}].path: must be a string starting with "/v1/"`);
  if (BATCH_PATH.test(path)) throw invalid(`commands[${i}].path: a batch cannot contain /v1/batch`);
  return { method: method as BatchMethod, path, hasBody: Object.hasOwn(command, 'body'), body: command.body };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const invalid = (message: string) => badRequest('invalid_batch', message);
