import { TracingSettings, tracingSettings } from './tracing-settings';

function parse(env: Record<string, string>): { settings: TracingSettings; problems: string[] } {
  const problems: string[] = [];
  return { settings: tracingSettings(env, problems), problems };
}

describe(tracingSettings.name, () => {
  it.each([
    [{}, null],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'http://collector:4318/v1/traces'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'http://collector:4318/v1/traces'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector/custom' }, 'https://collector/custom'],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/t' },
      'http://b:4318/t',
    ],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' }, null],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'none' }, null],
  ])('%j exports to %s', (env, url) => {
    expect(parse(env)).toEqual({ settings: expect.objectContaining({ tracesUrl: url }), problems: [] });
  });

  it.each([
    [{}, 1, true],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }, 0.25, true],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, 0, false],
    [{ OTEL_TRACES_SAMPLER: 'always_off' }, 0, false],
    [{ OTEL_TRACES_SAMPLER: 'ALWAYS_ON' }, 1, false],
  ])('%j samples %d of new traces (parent-based: %s)', (env, sampleRatio, isParentBased) => {
    expect(parse(env)).toEqual({ settings: expect.objectContaining({ sampleRatio, isParentBased }), problems: [] });
  });

  it('defaults the service name and the export delay', () => {
    expect(parse({}).settings).toMatchObject({ serviceName: 'lattice-gateway', scheduleDelayMs: 5000 });
    expect(parse({ OTEL_SERVICE_NAME: 'edge', OTEL_BSP_SCHEDULE_DELAY: '100' }).settings).toMatchObject({
      serviceName: 'edge',
      scheduleDelayMs: 100,
    });
  });

  it.each([
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL (e.g. "http://otel-collector:4318")',
    ],
    [
      { OTEL_TRACES_SAMPLER: 'jaeger_remote' },
      'OTEL_TRACES_SAMPLER: "jaeger_remote" is not supported (always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)',
    ],
    [
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      'OTEL_TRACES_SAMPLER_ARG: "1.5" is not a ratio between 0 and 1',
    ],
    [{ OTEL_BSP_SCHEDULE_DELAY: 'soon' }, 'OTEL_BSP_SCHEDULE_DELAY: "soon" is not a whole number of milliseconds'],
  ])('%j is a problem: %s', (env, problem) => {
    expect(parse(env).problems).toEqual([problem]);
  });
});
