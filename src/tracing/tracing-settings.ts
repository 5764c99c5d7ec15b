/**
 * OpenTelemetry settings, read from the standard OTEL_* variables (issue 21).
 * Tracing is off unless OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT is set (and OTEL_SDK_DISABLED is not true).
 */
export interface TracingSettings {
  /** Where spans are POSTed as OTLP/HTTP JSON; null = tracing off. */
  readonly tracesUrl: string | null;
  /** OTEL_SERVICE_NAME (`lattice-gateway`). */
  readonly serviceName: string;
  /** Share of new traces recorded, 0..1 (OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG). */
  readonly sampleRatio: number;
  /** A sampler named `parentbased_*` (the default): an incoming traceparent's decision wins. */
  readonly isParentBased: boolean;
  /** OTEL_BSP_SCHEDULE_DELAY: the most a finished span waits before export (ms). */
  readonly scheduleDelayMs: number;
}

const SAMPLERS: Record<string, { ratio: number | null; isParentBased: boolean }> = {
  always_on: { ratio: 1, isParentBased: false },
  always_off: { ratio: 0, isParentBased: false },
  traceidratio: { ratio: null, isParentBased: false },
  parentbased_always_on: { ratio: 1, isParentBased: true },
  parentbased_always_off: { ratio: 0, isParentBased: true },
  parentbased_traceidratio: { ratio: null, isParentBased: true },
};

/** Parse the OTEL_* variables of `env`; each problem is pushed as one line onto `problems`. */
export function tracingSettings(
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): TracingSettings {
  const samplerName = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').toLowerCase();
  const sampler = SAMPLERS[samplerName];
  if (sampler === undefined)
    problems.push(`OTEL_TRACES_SAMPLER: "${samplerName}" is not supported (${Object.keys(SAMPLERS).join(', ')})`);
  return {
    tracesUrl: isOff(env) ? null : tracesUrl(env, problems),
    serviceName: env.OTEL_SERVICE_NAME ?? 'lattice-gateway',
    sampleRatio: sampler?.ratio ?? ratio(env.OTEL_TRACES_SAMPLER_ARG, problems),
    isParentBased: sampler?.isParentBased ?? true,
    scheduleDelayMs: delay(env.OTEL_BSP_SCHEDULE_DELAY, problems),
  };
}

function isOff(env: Readonly<Record<string, string | undefined>>): boolean {
  const hasEndpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '') !== '';
  return (
    !hasEndpoint ||
    env.OTEL_SDK_DISABLED?.toLowerCase() === 'true' ||
    env.OTEL_TRACES_EXPORTER?.toLowerCase() === 'none'
  );
}

/** The signal-specific variable is used as is; the general one gets `/v1/traces` appended (OTLP spec). */
function tracesUrl(env: Readonly<Record<string, string | undefined>>, problems: string[]): string | null {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const [key, url] = specific
    ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific]
    : ['OTEL_EXPORTER_OTLP_ENDPOINT', env.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, '') + '/v1/traces'];
  if (!/^https?:\/\/[^\s/]+/.test(url)) {
    problems.push(`${key}: must be an http:// or https:// URL (e.g. "http://otel-collector:4318")`);
    return null;
  }
  return url;
}

function ratio(text: string | undefined, problems: string[]): number {
  if (text === undefined) return 1;
  const value = Number(text);
  if (text.trim() !== '' && value >= 0 && value <= 1) return value;
  problems.push(`OTEL_TRACES_SAMPLER_ARG: "${text}" is not a ratio between 0 and 1`);
  return 1;
}

function delay(text: string | undefined, problems: string[]): number {
  if (text === undefined) return 5000;
  const value = Number(text);
  if (Number.isInteger(value) && value >= 0) return value;
  problems.push(`OTEL_BSP_SCHEDULE_DELAY: "${text}" is not a whole number of milliseconds`);
  return 5000;
}
