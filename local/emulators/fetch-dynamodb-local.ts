/**
 * `npm run emulators:fetch`: downloads, verifies and unpacks DynamoDB Local into the local cache
 * (a no-op when it is already there) and prints the emulator directory.
 */
import { ensureDynamoDbLocal } from './dynamodb-local';

const started = performance.now();
try {
  const dir = await ensureDynamoDbLocal({ log: (message) => console.error(`[emulators] ${message}`) });
  console.error(`[emulators] done in ${Math.round(performance.now() - started)} ms`);
  console.log(dir);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
