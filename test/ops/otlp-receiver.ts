import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { within } from '../e2e/harness/wait';

/** A span as the OTLP/HTTP JSON encoding carries it, attributes flattened to a record. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Record<string, string | number | boolean>;
  readonly status: { code?: number; message?: string };
  /** service.name and other attributes of the resource that sent it. */
  readonly resource: Record<string, string | number | boolean>;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
}

/**
 * A real OTLP/HTTP receiver on port 0: accepts `POST /v1/traces` with a JSON
 * body (ExportTraceServiceRequest), answers 200, and keeps every span and the
 * raw bodies (to prove what was never sent).
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly bodies: string[] = [];
  private readonly waiters: Array<() => void> = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const isTraces =
        req.method === 'POST' && req.url === '/v1/traces' && /json/.test(req.headers['content-type'] ?? '');
      if (isTraces) this.receive(body);
      res.writeHead(isTraces ? 200 : 404, { 'Content-Type': 'application/json' }).end(isTraces ? '{}' : '');
    });
  });
  url = '';

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', () => resolve()));
    receiver.url = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}`;
    return receiver;
  }

  /** The first span matching `match`, received already or within `ms`. */
  async span(match: (span: ReceivedSpan) => boolean, what: string, ms = 5000): Promise<ReceivedSpan> {
    const found = (): ReceivedSpan | undefined => this.spans.find(match);
    if (found()) return found()!;
    return within(
      new Promise<ReceivedSpan>((resolve) => {
        const check = (): void => {
          if (found()) resolve(found()!);
          else this.waiters.push(check);
        };
        this.waiters.push(check);
      }),
      `${what} at the OTLP receiver (received: ${this.spans.map((s) => s.name).join(', ') || 'nothing'})`,
      ms,
    );
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private receive(body: string): void {
    this.bodies.push(body);
    const request = JSON.parse(body) as {
      resourceSpans: {
        resource: { attributes: OtlpAttribute[] };
        scopeSpans: { spans: (Omit<ReceivedSpan, 'attributes' | 'resource'> & { attributes: OtlpAttribute[] })[] }[];
      }[];
    };
    for (const resourceSpans of request.resourceSpans) {
      const resource = flatten(resourceSpans.resource.attributes);
      for (const scope of resourceSpans.scopeSpans) {
        for (const span of scope.spans)
          this.spans.push({
            ...span,
            parentSpanId: span.parentSpanId ?? '',
            attributes: flatten(span.attributes),
            resource,
          });
      }
    }
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

function flatten(attributes: OtlpAttribute[]): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes)
    flat[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? Number(value.intValue);
  return flat;
}
