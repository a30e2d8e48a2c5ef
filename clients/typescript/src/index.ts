// The official TypeScript client of the Agency Listing and Media Service API.
export { type Answer, type Client, type ClientOptions, createClient } from "./client.js";
export { AlmsError, isAlmsError } from "./errors.js";
export type { components, operations, paths } from "./openapi.js";
export type { RetryPolicy } from "./retry.js";
export type { CallOptions, Method, Operation, PathsFor, RequestOptions, Success } from "./types.js";
export {
  type HeadersLike,
  type VerifyOptions,
  verifyHubSignature,
  verifyStandardSignature,
  verifyWebhook,
  type WebhookEnvelope,
  WebhookVerificationError,
} from "./webhooks.js";
