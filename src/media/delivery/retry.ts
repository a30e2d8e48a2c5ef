import { doublingBackoff } from "../../lib/backoff";

/** Attempts of a delivery before its outcome is final: 30 s, 1, 2 and 4 min apart. */
export const MAX_DELIVERY_ATTEMPTS = 5;
export const retryDelaySeconds = (attempt: number) => doublingBackoff(attempt, 30, 3600);
