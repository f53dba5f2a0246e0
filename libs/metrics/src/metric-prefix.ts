/** Every metric this service exports starts with it; tests and dashboards derive their names from it. */
export const METRIC_PREFIX = 'nest_offload_';
