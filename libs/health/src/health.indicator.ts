/** One thing readiness depends on. `check` resolves when healthy and rejects with the reason otherwise. */
export interface HealthIndicator {
  readonly name: string;
  check(): Promise<void>;
  /** False for a dependency the app degrades without: reported, but readiness stays true. */
  readonly critical?: boolean;
}

/** Injection token of the app's `HealthIndicator[]`, provided by each app module. */
export const HEALTH_INDICATORS = Symbol('HEALTH_INDICATORS');
