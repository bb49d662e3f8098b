import { Rerunner } from "../src/rerun";

describe("Rerunner", () => {
  it("runs one at a time, and once more after a run for any number of kicks during it", async () => {
    let runs = 0;
    let inFlight = 0;
    let release: () => void = () => undefined;
    const rerunner = new Rerunner(async () => {
      runs++;
      inFlight++;
      expect(inFlight).toBe(1);
      if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
      inFlight--;
    }, (err) => {
      throw err;
    });
    rerunner.kick();
    rerunner.kick();
    rerunner.kick();
    expect(runs).toBe(1);
    release();
    for (let i = 0; i < 100 && runs < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    await rerunner.stop();
    expect(runs).toBe(2);
    // Stopped: kicks run nothing.
    rerunner.kick();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(runs).toBe(2);
  });

  it("hands a failed run's error over and runs again on the next kick", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const rerunner = new Rerunner(async () => {
      runs++;
      if (runs === 1) throw new Error("first run fails");
    }, (err) => errors.push(err));
    rerunner.kick();
    await new Promise((resolve) => setTimeout(resolve, 10));
    rerunner.kick();
    for (let i = 0; i < 100 && runs < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    await rerunner.stop();
    expect(errors).toHaveLength(1);
    expect(runs).toBe(2);
  });
});
