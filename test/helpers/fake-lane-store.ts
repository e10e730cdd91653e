/**
 * Lanes and their turn slots in memory, as `lane-table.ts` keeps them: a lane is read from the queued tasks of the
 * fake task store (the table's sparse `lanes` index), a turn slot is a record of its own.
 */
import type * as LanePort from '#core/ports/lane-store';
import { laneOf } from '#domain/lanes';
import type { FakeTaskStore } from './fake-task-store';

export class FakeLaneStore implements LanePort.LaneStore {
  constructor(private readonly tasks: FakeTaskStore) {}

  private readonly turnSlots = new Map<string, LanePort.TurnSlot>();

  async laneTasks(laneId: string, readyBy: number | undefined, limit: number): Promise<LanePort.LaneEntry[]> {
    return this.tasks
      .all()
      .filter((t) => t.status === 'queued' && laneOf(t)?.laneId === laneId)
      .map((t) => ({ taskId: t.taskId, readyAt: t.notBefore ?? t.createdAt }))
      .filter((entry) => readyBy === undefined || entry.readyAt <= readyBy)
      .sort((a, b) => a.readyAt - b.readyAt || a.taskId.localeCompare(b.taskId))
      .slice(0, limit);
  }

  async turnSlot(laneId: string): Promise<LanePort.TurnSlot> {
    return { ...this.turnSlots.get(laneId) };
  }

  async noteOffer(
    laneId: string,
    now: number,
    ifEmpty?: { readonly token: string; readonly visibleAt: number },
  ): Promise<LanePort.TurnSlot> {
    const current = this.turnSlots.get(laneId) ?? {};
    const taken = ifEmpty && current.token === undefined ? { ...ifEmpty, heldAt: now } : {};
    const slot = { ...current, ...taken, lastOfferAt: now };
    this.turnSlots.set(laneId, slot);
    return { ...slot };
  }

  async takeTurnSlot(
    laneId: string,
    slot: { readonly token: string; readonly visibleAt: number; readonly now: number },
    replacing: string | undefined,
  ): Promise<boolean> {
    const current = this.turnSlots.get(laneId) ?? {};
    if (current.token !== replacing) return false;
    this.turnSlots.set(laneId, {
      ...current,
      token: slot.token,
      visibleAt: slot.visibleAt,
      heldAt: slot.now,
    });
    return true;
  }

  async holdTurnSlot(
    laneId: string,
    token: string,
    visibleAt: number,
    now: number,
    offeredSince?: number,
  ): Promise<boolean> {
    const current = this.turnSlots.get(laneId) ?? {};
    if (current.token !== token) return false;
    if (offeredSince !== undefined && (current.lastOfferAt ?? Number.NEGATIVE_INFINITY) < offeredSince)
      return false;
    this.turnSlots.set(laneId, { ...current, visibleAt, heldAt: now });
    return true;
  }

  async freeTurnSlot(
    laneId: string,
    token: string,
    quietSince: number,
  ): Promise<'freed' | 'offered' | 'superseded'> {
    const current = this.turnSlots.get(laneId) ?? {};
    if (current.token !== token) return 'superseded';
    if (current.lastOfferAt !== undefined && current.lastOfferAt >= quietSince) return 'offered';
    this.turnSlots.set(laneId, {
      ...(current.lastOfferAt === undefined ? {} : { lastOfferAt: current.lastOfferAt }),
    });
    return 'freed';
  }
}
