// The routes of the OpenAPI document that are not gateway actions: the verifiers' events stream (Server-Sent
// Events), inbound payment provider webhooks, Prometheus metrics, the document itself and its rendered reference.
import { errorResponseRef, SERVER_ERRORS } from './openapi-components.ts';

type Json = Record<string, unknown>;

const serverErrors = (): Json => Object.fromEntries(SERVER_ERRORS.map((status) => [status, errorResponseRef(status)]));

const text = (description: string, mediaType: string): Json => ({ description, content: { [mediaType]: { schema: { type: 'string' } } } });

export function otherRoutes(): { paths: Json; tags: Json[]; securitySchemes: Json } {
  return {
    tags: [
      { name: 'events', description: 'Pushed changes of API keys for verifiers (Server-Sent Events, CONTRACT §11)' },
      { name: 'operations', description: 'Running the service: metrics, provider webhooks, this document and its rendered reference' },
    ],
    securitySchemes: {
      metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN' },
    },
    paths: {
      '/api/admin/serviceapikey/events': {
        get: {
          operationId: 'admin_serviceapikey_events',
          tags: ['events'],
          summary: 'Streams a `key.changed` event for every change of a key’s validity, parameters, quota state or existence',
          description:
            'Server-Sent Events for verifiers (staff permission `serviceapikey.check`). Each event has an `id`; send the last one back as ' +
            '`Last-Event-ID` when reconnecting to receive what was missed, or a `{"type": "resync"}` event when that history is gone. ' +
            'A comment line every 15 s keeps the stream open. Failures before the stream starts answer the JSON envelope.',
          security: [{ basic: [] }],
          'x-permission': 'serviceapikey.check',
          parameters: [
            { name: 'Last-Event-ID', in: 'header', required: false, description: 'The id of the last event received', schema: { type: 'string' } },
          ],
          responses: {
            '200': text('`data: {"type": "key.changed", "order_id": 1, "key_id": 1}` frames, each after an `id:` line', 'text/event-stream'),
            '401': errorResponseRef('401'),
            '403': errorResponseRef('403'),
            '429': errorResponseRef('429'),
            ...serverErrors(),
          },
        },
      },
      '/webhooks/{gateway}': {
        post: {
          operationId: 'provider_webhook',
          tags: ['operations'],
          summary: 'Receives a payment provider’s signed event (Stripe: `/webhooks/stripe`)',
          description: 'The body is verified against the provider’s signature header as raw bytes; a bad signature answers 400 and stores nothing.',
          security: [],
          parameters: [{ name: 'gateway', in: 'path', required: true, description: 'The gateway code', schema: { type: 'string' } }],
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
          responses: {
            '200': {
              description: 'Received (a repeat of an event already received is received again and changes nothing)',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['result', 'error'],
                    properties: {
                      result: { type: 'object', required: ['received', 'outcome'], properties: { received: { const: true }, outcome: { enum: ['applied', 'duplicate', 'deferred'] } } },
                      error: { type: 'null' },
                    },
                  },
                },
              },
            },
            '400': errorResponseRef('400'),
            '404': errorResponseRef('404'),
            ...serverErrors(),
          },
        },
      },
      '/metrics': {
        get: {
          operationId: 'metrics',
          tags: ['operations'],
          summary: 'Prometheus metrics (only when METRICS_TOKEN is set)',
          security: [{ metricsToken: [] }],
          responses: {
            '200': text('Prometheus text exposition format', 'text/plain'),
            '401': errorResponseRef('401'),
          },
        },
      },
      '/api/openapi.json': {
        get: {
          operationId: 'openapi_document',
          tags: ['operations'],
          summary: 'This OpenAPI document',
          security: [],
          responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } },
        },
      },
      '/api/docs': {
        get: {
          operationId: 'api_reference',
          tags: ['operations'],
          summary: 'This document rendered as a browsable reference',
          security: [],
          responses: { '200': text('An HTML page', 'text/html') },
        },
      },
    },
  };
}
