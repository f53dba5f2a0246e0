/** One thing readiness depends on. `check` resolves when healthy and rejects with the reason otherwise. */
export interface HealthIndicator {
  readonly name: string;
  check(): Promise<void>;
}

/** Injection token of the app's `HealthIndicator[]`, provided by each app module. */
export const HEALTH_INDICATORS = Symbol('HEALTH_INDICATORS');
