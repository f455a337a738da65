/**
 * The evaluations waiting for a policy evaluator (cel-sandbox.ts), taken in turn by key (the
 * tenant, or the session when there is none): each key has its own first-come-first-served line,
 * and the lines are served round-robin, so one key's backlog never holds another key's evaluation
 * behind it. An evaluation that cannot go to the free evaluator (one sent again waits for a process
 * started after the one that lost it) is passed over, not blocking its line's later ones.
 */
export class FairQueue<T extends { key: string }> {
  /** The lines, in the order they are served next; a line is dropped when it empties. */
  readonly #lines = new Map<string, T[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Adds `item` at the end of its key's line (`front`: at the head, its line served next). */
  push(item: T, front = false): void {
    let line = this.#lines.get(item.key);
    if (line === undefined) {
      line = [];
      if (front) {
        const rest = [...this.#lines];
        this.#lines.clear();
        this.#lines.set(item.key, line);
        for (const [k, l] of rest) this.#lines.set(k, l);
      } else {
        this.#lines.set(item.key, line);
      }
    }
    if (front) line.unshift(item);
    else line.push(item);
    this.#size++;
  }

  /**
   * The first item `fits`, looking at the lines in turn (in each, the first that fits); its line
   * then goes to the back of the turn. Undefined when none fits.
   */
  take(fits: (item: T) => boolean = () => true): T | undefined {
    for (const [key, line] of this.#lines) {
      const at = line.findIndex(fits);
      if (at < 0) continue;
      const item = line.splice(at, 1)[0]!;
      this.#size--;
      this.#lines.delete(key);
      if (line.length > 0) this.#lines.set(key, line);
      return item;
    }
    return undefined;
  }

  /** Removes `item` (it gave up waiting); false when it was not waiting. */
  remove(item: T): boolean {
    const line = this.#lines.get(item.key);
    const at = line?.indexOf(item) ?? -1;
    if (line === undefined || at < 0) return false;
    line.splice(at, 1);
    this.#size--;
    if (line.length === 0) this.#lines.delete(item.key);
    return true;
  }

  /** Every waiting item, removed. */
  drain(): T[] {
    const all = [...this.values()];
    this.#lines.clear();
    this.#size = 0;
    return all;
  }

  *values(): IterableIterator<T> {
    for (const line of this.#lines.values()) yield* line;
  }
}
