/**
 * Runs the local stack in the foreground until Ctrl-C (SIGINT) or SIGTERM: the banner on standard output, a wrong
 * command line as one line on standard error, which resolves with exit code 2. Once up it ends only by a signal,
 * and then exits the process: the emulators' clients would keep it alive.
 */
import {
  type DevStackArguments,
  type DevStackDefinition,
  DevStackUsageError,
  startDevStack,
} from './dev-stack';

export async function runDevStack(args: DevStackArguments, definition: DevStackDefinition): Promise<number> {
  // The emulators run on this machine's Node; the deployed functions run on Node 22.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  let stack: Awaited<ReturnType<typeof startDevStack>>;
  try {
    stack = await startDevStack(args, definition);
  } catch (error) {
    if (!(error instanceof DevStackUsageError)) throw error;
    console.error(error.message);
    return 2;
  }
  console.log(stack.banner);
  return new Promise<never>(() => {
    const stop = () => void stack.stop().finally(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
