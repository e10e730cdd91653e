import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emulatorCacheRoot } from '#local/emulators/dynamodb-local';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('where DynamoDB Local is cached', () => {
  it('in this repository, under its own .agent-scheduler folder', () => {
    expect(emulatorCacheRoot({}, true)).toBe(join(ROOT, '.agent-scheduler', 'emulators'));
  });

  it('from the installed package, in the user’s cache folder, never inside node_modules', () => {
    expect(emulatorCacheRoot({}, false)).toBe(join(homedir(), '.cache', 'agent-scheduler'));
    expect(emulatorCacheRoot({ XDG_CACHE_HOME: '/var/cache/me' }, false)).toBe(
      '/var/cache/me/agent-scheduler',
    );
  });

  it('wherever AGENT_SCHEDULER_CACHE_DIR says, either way', () => {
    for (const fromSource of [true, false]) {
      expect(emulatorCacheRoot({ AGENT_SCHEDULER_CACHE_DIR: '/opt/emulators' }, fromSource)).toBe(
        '/opt/emulators',
      );
    }
  });
});
