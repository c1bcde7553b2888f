/**
 * `@syllabus/testing`: the Syllabus API in process, for integrators' own test suites
 * (vitest, jest, node:test: it imports none of them). See README.md.
 */
export {
  type ApiResponse,
  createTestApi,
  type EventLog,
  type Faults,
  matches,
  type ReceivedWebhook,
  type RequestOptions,
  type Seeds,
  type TestApi,
  type TestApiOptions,
  type TestClock,
  type WebhookCapture,
  WebhookVerificationFailed
} from "./test-api.js"
export { AdjustableClock, type DurationLike, toMilliseconds } from "./clock.js"
export { type FaultyPort, Stalls, storageWithFaults, storePorts, withFaults } from "./faults.js"
