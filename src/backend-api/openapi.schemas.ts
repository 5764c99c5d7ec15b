/**
 * JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12) of the /v1 bodies, placed
 * under `components.schemas` of the document; the controllers' decorators
 * refer to them (openapi.decorators.ts). They describe what the pipes check
 * (SPEC §5, §6.2, §6.4; seed §4.4), not a second validator: nothing reads
 * them at run time.
 */

const VARIABLE_PREFIX = '^[A-Za-z_][A-Za-z0-9_]*';

/** Path parameter patterns (seed §4.4, SPEC §5). */
export const PARAM_PATTERNS = {
  cid: '^[A-Za-z0-9_-]{1,64}$',
  topic: '^[A-Za-z0-9:_-]+(/[A-Za-z0-9:_-]+)*$',
  namespace: '^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$',
  userId: '^[A-Za-z0-9:_/-]{1,256}$',
} as const;

const ref = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` });
export const schemaRef = ref;

const variables = {
  [`${VARIABLE_PREFIX}_counter$`]: {
    type: 'integer',
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'merged by max',
  },
  [`${VARIABLE_PREFIX}_set$`]: { type: 'array', items: { type: 'string' }, description: 'grow-only union' },
  [`${VARIABLE_PREFIX}_register$`]: {
    type: 'array',
    prefixItems: [{ type: 'number', minimum: 0 }, {}],
    minItems: 2,
    maxItems: 2,
    description: '[version, value]: the higher version wins; on equal versions the greater canonical JSON',
  },
};

export const OPENAPI_SCHEMAS: Record<string, object> = {
  ApiError: {
    type: 'object',
    description: 'Body of every 400 answer (SPEC §5) and of a 503 in cluster mode (SPEC §11)',
    properties: {
      error: { type: 'string', examples: ['invalid_lattice'] },
      message: { type: 'string', description: 'what was wrong and where' },
    },
    required: ['error', 'message'],
    additionalProperties: false,
  },
  LatticeVariables: {
    type: 'object',
    description: 'Variables typed by name suffix (SPEC §6.2); any other name is a 400',
    patternProperties: variables,
    additionalProperties: false,
  },
  LatticePrivateEntry: {
    type: 'object',
    description: "A user's private variables of one key; `{}` grants the user access to the shared key",
    properties: {
      expires_in: {
        type: 'string',
        description: 'duration ("10s", "90 minutes") after which the entry is deleted',
        examples: ['10m'],
      },
    },
    patternProperties: variables,
    additionalProperties: false,
  },
  LatticeContent: {
    type: 'object',
    description:
      'Lattice content (SPEC §6.4); keys match [A-Za-z0-9:_.-]{1,256}; nested at most 128 levels; unknown top-level keys are ignored',
    properties: {
      shared: {
        type: 'object',
        propertyNames: { pattern: '^[A-Za-z0-9:_.-]{1,256}$' },
        additionalProperties: ref('LatticeVariables'),
      },
      private: {
        type: 'object',
        propertyNames: { pattern: PARAM_PATTERNS.userId },
        additionalProperties: {
          type: 'object',
          propertyNames: { pattern: '^[A-Za-z0-9:_.-]{1,256}$' },
          additionalProperties: ref('LatticePrivateEntry'),
        },
      },
    },
    examples: [
      { shared: { room1: { last_message_counter: 10 } }, private: { alice: { room1: { last_seen_counter: 7 } } } },
    ],
  },
  UserList: {
    type: 'array',
    description: 'User ids',
    items: { type: 'string', pattern: PARAM_PATTERNS.userId },
    examples: [['bob', 'carol']],
  },
  BatchRequest: {
    type: 'object',
    description:
      'Commands run in order, each exactly as its endpoint (SPEC §5); 1 to BATCH_MAX_COMMANDS (default 1000)',
    properties: {
      commands: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          properties: {
            method: { enum: ['PUT', 'DELETE', 'POST'] },
            path: { type: 'string', pattern: '^/v1/', description: 'an endpoint path of /v1, not /v1/batch' },
            body: { description: "the endpoint's JSON body, only for endpoints that take one" },
          },
          required: ['method', 'path'],
        },
      },
    },
    required: ['commands'],
    examples: [
      {
        commands: [
          { method: 'PUT', path: '/v1/connection/CID/subscriptions/room/1' },
          { method: 'POST', path: '/v1/publish/room/1', body: { text: 'hi' } },
        ],
      },
    ],
  },
  BatchResponse: {
    type: 'object',
    properties: { results: { type: 'array', items: ref('BatchResult'), description: 'one per command, in order' } },
    required: ['results'],
  },
  BatchResult: {
    type: 'object',
    description: 'The status the single endpoint would have answered; for 400 and 503 also its error body',
    properties: {
      status: { type: 'integer', examples: [204] },
      error: { type: 'string' },
      message: { type: 'string' },
    },
    required: ['status'],
  },
};
