import { Global, Module } from '@nestjs/common';
import { UPLOAD_CLAIMS } from '../files/upload-claims';
import { UploadsController } from './uploads.controller';
import { Uploads } from './uploads';

/** Uploads of large files (POST /v1/uploads). why global: it lends the core's file intake its UPLOAD_CLAIMS, which the core injects as optional. */
@Global()
@Module({
  controllers: [UploadsController],
  providers: [Uploads, { provide: UPLOAD_CLAIMS, useExisting: Uploads }],
  exports: [UPLOAD_CLAIMS],
})
export class UploadsModule {}
