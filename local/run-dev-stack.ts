/**
 * Runs the local stack in the foreground until Ctrl-C (SIGINT) or SIGTERM, with the banner on standard output.
 * Throws `DevStackUsageError` for a wrong command line or a port in use, before any emulator starts. Once up it ends
 * only by a signal, and then exits the process: the emulators' clients would keep it alive.
 */
import { type DevStackArguments, type DevStackDefinition, startDevStack } from './dev-stack';

export { DevStackUsageError } from './dev-stack';

export async function runDevStack(args: DevStackArguments, definition: DevStackDefinition): Promise<never> {
  // The emulators run on this machine's Node; the deployed functions run on Node 22.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const stack = await startDevStack(args, definition);
  console.log(stack.banner);
  return new Promise<never>(() => {
    const stop = () => void stack.stop().finally(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
