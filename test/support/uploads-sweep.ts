/**
 * The uploads capability's sweep, for the files suite's lifecycle case (which skips that part without
 * the capability). why a file of its own: it is the capability's, removed with it by
 * `npm run remove:capability`, so no other test names a file of the capability.
 */
export { sweepUploads } from '../../apps/api/src/uploads/uploads';
