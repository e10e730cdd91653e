/**
 * The fleet of the fleet chaos run: one slot per agent process, each of a language for the whole run (the first
 * `ceil(agents × pythonShare)` Python, the rest TypeScript), its process started with the proxy as its endpoint and
 * a log of its own. A process killed is replaced in its slot; so is a revoked agent's (stopped meanwhile), and one
 * that died on its own (which the report counts: an agent should never die). At the end every process is stopped
 * with SIGTERM and waited for.
 */
import { join } from 'node:path';
import type { FleetLogs } from './fleet-log';
import { type AgentProcess, findPython, type Language, startAgentProcess } from './fleet-processes';
import type { CheckedRun } from './http-report';

const ROLE = 'chaos-leader';
/** Longest wait for the first processes to open their sessions (tsx compiles each TypeScript agent first). */
const READY_MS = 180_000;
/** Longest a process may take to stop on SIGTERM once the work has ended. */
const STOP_MS = 20_000;

export interface FleetMember {
  readonly name: string;
  readonly agentId: string;
  readonly token: string;
  readonly language: Language;
  readonly process: AgentProcess;
  killedAt?: number;
  stopping?: boolean;
}

export interface FleetSlot {
  readonly index: number;
  readonly language: Language;
  readonly role: string | undefined;
  current: FleetMember;
}

/** A process that exited without being killed or asked to stop, and without its agent stopping it. */
export interface DiedAgent {
  readonly name: string;
  readonly language: Language;
  readonly code: number | null;
  readonly output: string;
}

export interface FleetOptions {
  readonly agents: number;
  readonly pythonShare: number;
  readonly concurrency: number;
  readonly seed: number;
  /** The agents' endpoint: the proxy. */
  readonly endpoint: string;
  readonly logDir: string;
  /** Slots whose agents volunteer for the run's role: the first Python and the last TypeScript. @default 2 */
  readonly roleVolunteers?: number;
}

export type Fleet = Awaited<ReturnType<typeof startFleet>>;

/** Starts every slot's process and waits until each has opened its session. */
export async function startFleet(run: CheckedRun, logs: FleetLogs, options: FleetOptions) {
  const python = options.pythonShare > 0 ? findPython() : undefined;
  if (options.pythonShare > 0 && !python) throw new Error('the fleet needs Python 3.10 or later on PATH');
  const pythonCount = Math.ceil(options.agents * options.pythonShare);
  const volunteers = options.roleVolunteers ?? 2;
  const members: FleetMember[] = [];
  const died: DiedAgent[] = [];
  const started: Record<Language, number> = { python: 0, typescript: 0 };
  let stopOverran = 0;
  let serial = 0;

  const register = async (name: string) => {
    const created = await run.operator.createAgent({
      name,
      queues: ['chaos'],
      maxConcurrency: options.concurrency,
    });
    return { agentId: created.agent.agentId, token: created.token };
  };

  const launch = async (slot: Omit<FleetSlot, 'current'>, identity?: { agentId: string; token: string }) => {
    const { index, language, role } = slot;
    const name = `${language === 'python' ? 'py' : 'ts'}-${index}-${serial++}`;
    const { agentId, token } = identity ?? (await register(name));
    const logPath = join(options.logDir, `${name}.jsonl`);
    logs.add({ name, agentId, language, logPath });
    const process = startAgentProcess({
      language,
      ...(python ? { python } : {}),
      endpoint: options.endpoint,
      token,
      queue: 'chaos',
      concurrency: options.concurrency,
      logPath,
      seed: options.seed * 1_000 + serial,
      ...(role ? { role } : {}),
    });
    started[language]++;
    const member: FleetMember = { name, agentId, token, language, process };
    members.push(member);
    return member;
  };

  /** What follows a process's exit that nobody asked for: a revoked agent's stop, or a death; then a new agent. */
  const watch = (slot: FleetSlot, member: FleetMember) => {
    void member.process.exited.then(async (code) => {
      if (member.killedAt !== undefined || member.stopping) return;
      logs.poll();
      if (!logs.stopped(member.name)) {
        died.push({ name: member.name, language: member.language, code, output: member.process.output() });
        logs.killed(member.name, Date.now());
      }
      if (run.live.stopping || slot.current !== member) return;
      await replace(slot, false);
    });
  };

  const replace = async (slot: FleetSlot, sameAgent: boolean) => {
    const previous = slot.current;
    const member = await launch(slot, sameAgent ? previous : undefined).catch(() => undefined);
    if (!member) {
      run.faults.count('agentNotReplaced', slot.language);
      return;
    }
    slot.current = member;
    watch(slot, member);
  };

  const slots: FleetSlot[] = [];
  for (let index = 0; index < options.agents; index++) {
    const language: Language = index < pythonCount ? 'python' : 'typescript';
    const volunteering = (index === 0 && volunteers > 0) || (index === options.agents - 1 && volunteers > 1);
    const slot = { index, language, role: volunteering ? ROLE : undefined };
    slots.push({ ...slot, current: await launch(slot) });
  }
  for (const slot of slots) watch(slot, slot.current);
  const deadline = Date.now() + READY_MS;
  for (;;) {
    logs.poll();
    if (slots.every((slot) => logs.ready(slot.current.name))) break;
    const dead = slots.find((slot) => slot.current.process.child.exitCode !== null);
    if (dead || Date.now() > deadline) {
      await Promise.all(slots.map((slot) => slot.current.process.stop(1_000)));
      throw new Error(
        `the fleet did not start: ${(dead ?? slots.find((s) => !logs.ready(s.current.name)))?.current.process.output()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  return {
    slots,
    died,
    started,
    get stopOverran() {
      return stopOverran;
    },
    /** Every agent process the run started, for the report's names. */
    everyAgent: () => members.map(({ name, agentId }) => ({ name, agentId })),
    /** Kills the slot's process with SIGKILL and starts its replacement, with the same agent half the time. */
    async kill(slot: FleetSlot): Promise<void> {
      const member = slot.current;
      member.killedAt = member.process.kill();
      await member.process.exited;
      logs.killed(member.name, member.killedAt);
      await replace(slot, run.random() < 0.5);
    },
    /**
     * Revokes the slot's agent and starts a new agent in its place. The revoked process is stopped with SIGTERM
     * meanwhile: its requests are refused (401) from now on, so its Worker cannot stop on its own; its handlers stop
     * when its lease is over by its own reckoning, and its session's tasks wait that long before another agent's.
     */
    async revoke(slot: FleetSlot): Promise<void> {
      const member = slot.current;
      await run.operator.revokeAgent(member.agentId).catch(() => undefined);
      member.stopping = true;
      void member.process.stop(STOP_MS).then((inTime) => {
        if (inTime) return;
        stopOverran++;
        logs.killed(member.name, Date.now());
      });
      await replace(slot, false);
    },
    /** SIGKILL to every process still running: a run that failed leaves none behind. */
    async killAll(): Promise<void> {
      await Promise.all(
        members
          .filter((member) => member.process.child.exitCode === null)
          .map((member) => {
            member.process.kill();
            return member.process.exited;
          }),
      );
    },
    /** SIGTERM to every process, each waited for; one that outlives the wait is killed. */
    async stopAll(): Promise<void> {
      await Promise.all(
        members.map(async (current) => {
          if (current.killedAt !== undefined || current.process.child.exitCode !== null) return;
          // A revoked agent's process is being stopped already, within its own bound.
          if (current.stopping) {
            await current.process.exited;
            return;
          }
          current.stopping = true;
          const inTime = await current.process.stop(STOP_MS);
          if (!inTime) {
            stopOverran++;
            logs.killed(current.name, Date.now());
          }
        }),
      );
    },
  };
}
