/**
 * Agents that `worker --name` registered, with their tokens, so that the next start of the same worker is the same
 * agent. Kept in the user's configuration folder (`agents.json`, readable by the user only: folder 0700, file
 * 0600), never in the project folder, keyed by endpoint and name.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sameEndpoint } from './config';
import { UsageError } from './errors';

export interface SavedAgent {
  readonly endpoint: string;
  readonly name: string;
  readonly agentId: string;
  readonly token: string;
  readonly queues: readonly string[];
  readonly maxConcurrency: number;
  readonly savedAt: string;
}

interface SavedFile {
  readonly agents: SavedAgent[];
}

export class SavedAgents {
  readonly file: string;

  constructor(readonly dir: string) {
    this.file = join(dir, 'agents.json');
  }

  get(endpoint: string, name: string): SavedAgent | undefined {
    return this.read().agents.find((a) => sameEndpoint(a.endpoint, endpoint) && a.name === name);
  }

  /** Saves the agent, replacing the one saved for the same endpoint and name. */
  put(agent: SavedAgent): void {
    const others = this.read().agents.filter(
      (a) => !(sameEndpoint(a.endpoint, agent.endpoint) && a.name === agent.name),
    );
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // A folder made earlier with a looser mode (or by mkdir -p) holds tokens too: the user's only.
    chmodSync(this.dir, 0o700);
    const temporary = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify({ agents: [...others, agent] }, null, 2)}\n`, {
      mode: 0o600,
    });
    // Written whole, then moved in place: a crash never leaves half a file, and other agents' tokens survive.
    renameSync(temporary, this.file);
    chmodSync(this.file, 0o600);
  }

  private read(): SavedFile {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return { agents: [] };
      throw new UsageError(`cannot read ${this.file}: ${(error as Error).message}`);
    }
    try {
      const value = JSON.parse(text) as Partial<SavedFile>;
      if (Array.isArray(value.agents)) return { agents: value.agents };
    } catch {
      // reported below
    }
    // Never overwritten: the tokens in it may be the only copy.
    throw new UsageError(`${this.file} is not a file of saved agents; move it away or fix it`);
  }
}
