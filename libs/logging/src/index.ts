export { loggingModule, REDACTED_PATHS } from './logging.module';
export { requestIdFrom } from './request-id';
