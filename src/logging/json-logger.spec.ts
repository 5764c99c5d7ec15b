import { Logger } from '@nestjs/common';
import { LogLevel } from '../config/gateway-config';
import { JsonLogger, nestLevelsOf } from './json-logger';

const LEVELS: LogLevel[] = ['error', 'warn', 'info', 'debug'];
const NEST_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;

describe(nestLevelsOf.name, () => {
  afterAll(() => Logger.overrideLogger([]));

  // A hot path asks Logger.isLevelEnabled before building a line: it must say
  // yes exactly when JsonLogger would write the line.
  it.each(LEVELS)('makes Logger.isLevelEnabled agree with what JsonLogger writes at %p', (level) => {
    const lines: string[] = [];
    const logger = new JsonLogger(level, 'json', (line) => lines.push(line));
    Logger.overrideLogger(nestLevelsOf(level));
    for (const nest of NEST_LEVELS) {
      lines.length = 0;
      logger[nest]({ msg: 'x' }, 'Context');
      expect([nest, Logger.isLevelEnabled(nest)]).toEqual([nest, lines.length === 1]);
    }
  });
});
