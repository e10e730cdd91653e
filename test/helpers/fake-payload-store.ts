/**
 * Payloads in memory, as `payload-table.ts` keeps them: by task and specification, with the `onFailure` beside
 * each; keeping one longer records the time on the fake task store's record, as the adapter does on the state item.
 */
import type * as PayloadPort from '#core/ports/payload-store';
import type { Task } from '#domain/task';
import type { FakeTaskStore } from './fake-task-store';

export class FakePayloadStore implements PayloadPort.PayloadStore {
  private readonly payloads = new Map<string, string>();
  private readonly onFailures = new Map<string, string>();

  constructor(private readonly tasks: FakeTaskStore) {}

  async getPayloads(tasks: readonly Pick<Task, 'taskId' | 'specHash'>[]): Promise<Map<string, string>> {
    return new Map(
      tasks.flatMap((t) => {
        const json = this.payloads.get(`${t.taskId}#${t.specHash}`);
        return json === undefined ? [] : [[t.taskId, json] as const];
      }),
    );
  }

  async putPayloads(payloads: readonly PayloadPort.NewPayload[]): Promise<PayloadPort.WrittenPayloads> {
    for (const p of payloads) {
      this.payloads.set(`${p.taskId}#${p.specHash}`, p.payloadJson);
      if (p.onFailureJson !== undefined) this.onFailures.set(`${p.taskId}#${p.specHash}`, p.onFailureJson);
    }
    return { inObject: () => false };
  }

  async getOnFailure(task: Pick<Task, 'taskId' | 'specHash'>): Promise<string | undefined> {
    return this.onFailures.get(`${task.taskId}#${task.specHash}`);
  }

  async deletePayloadObject(): Promise<void> {}

  async keepPayload(task: PayloadPort.PayloadHolder, purgeAt: number): Promise<void> {
    await this.tasks.write('keepPayload', task.taskId, (r) => {
      if ((r.task.payloadPurgeAt ?? 0) >= purgeAt) return false;
      r.task = { ...r.task, payloadPurgeAt: purgeAt };
      return true;
    });
  }

  async deletePayload(task: Pick<Task, 'taskId' | 'specHash'>): Promise<void> {
    this.payloads.delete(`${task.taskId}#${task.specHash}`);
    this.onFailures.delete(`${task.taskId}#${task.specHash}`);
  }
}
