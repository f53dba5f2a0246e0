export { OtelTracingModule } from './otel-tracing.module';
