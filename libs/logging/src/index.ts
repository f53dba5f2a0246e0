export { createLogger, REDACTED_PATHS } from './logger';
export type { Logger } from './logger';
export { LOGGER, LoggingModule } from './logging.module';
export { NestPinoLogger } from './nest-logger';
export { QUIET_PATHS, registerRequestLog } from './request-log';
export { requestIdFrom } from './request-id';
export { listeningOn } from './listening-on';
export { logUnhandledRejections } from './unhandled-rejections';
