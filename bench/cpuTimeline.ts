// CPU time sampled while bench/server.ts runs, so that it can be told over any span of the run
// (its wall, say) rather than over the span each process measured itself: the machine's, from
// /proc/stat, and each group of processes', from /proc/<pid>/stat (every thread counted).
// Linux only: elsewhere there is no timeline.
import { readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second. */
const MS_PER_TICK = 10;

/** The machine's CPU time so far, idle and in all, in jiffies; undefined where there is no /proc/stat. */
export function machineCpuTimes(): { idle: number; total: number } | undefined {
  try {
    const times = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are the idle time.
    return { idle: (times[3] ?? 0) + (times[4] ?? 0), total: times.reduce((sum, value) => sum + value, 0) };
  } catch {
    return undefined;
  }
}

/** User + system time of a process so far (every thread), in ms. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command, which is in parentheses: state is the first, utime the 12th, stime the 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
}

interface CpuSample {
  /** Wall-clock ms (`performance.timeOrigin + performance.now()`, as the hosts' event timestamps). */
  at: number;
  machineBusyMs: number;
  machineMs: number;
  groupsMs: number[];
}

/** CPU time over a span: each group's, and the machine's busy share of all its cores. */
export interface CpuSpan {
  groupsMs: number[];
  machineBusy: number;
}

/** The samples of a run, read over any span within it. */
export class CpuTimeline {
  constructor(private readonly samples: readonly CpuSample[]) {}

  /** CPU time from `from` to `to` (wall-clock ms), read between the samples around each; undefined outside them. */
  over(from: number, to: number): CpuSpan | undefined {
    const start = this.at(from);
    const end = this.at(to);
    if (start === undefined || end === undefined) return undefined;
    return {
      groupsMs: end.groupsMs.map((ms, index) => ms - (start.groupsMs[index] as number)),
      machineBusy: (end.machineBusyMs - start.machineBusyMs) / Math.max(1, end.machineMs - start.machineMs),
    };
  }

  /** The sample at `time`, linearly between the two around it. */
  private at(time: number): CpuSample | undefined {
    const afterIndex = this.samples.findIndex((sample) => sample.at >= time);
    const after = this.samples[afterIndex];
    const before = this.samples[afterIndex - 1];
    if (after === undefined) return undefined;
    if (before === undefined) return after.at === time ? after : undefined;
    const share = (time - before.at) / Math.max(1e-9, after.at - before.at);
    const between = (left: number, right: number) => left + (right - left) * share;
    return {
      at: time,
      machineBusyMs: between(before.machineBusyMs, after.machineBusyMs),
      machineMs: between(before.machineMs, after.machineMs),
      groupsMs: before.groupsMs.map((ms, index) => between(ms, after.groupsMs[index] as number)),
    };
  }
}

/**
 * Samples the machine's CPU time and each group of processes' every `everyMs` until `stop`,
 * which gives the timeline; undefined where there is no /proc.
 */
export function startCpuTimeline(
  groups: readonly (readonly number[])[],
  everyMs = 50,
): { stop(): CpuTimeline } | undefined {
  const sample = (): CpuSample | undefined => {
    const machine = machineCpuTimes();
    if (machine === undefined) return undefined;
    try {
      return {
        at: performance.timeOrigin + performance.now(),
        machineBusyMs: (machine.total - machine.idle) * MS_PER_TICK,
        machineMs: machine.total * MS_PER_TICK,
        groupsMs: groups.map((pids) => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0)),
      };
    } catch {
      return undefined;
    }
  };
  const first = sample();
  if (first === undefined) return undefined;
  const samples = [first];
  const timer = setInterval(() => {
    const next = sample();
    if (next !== undefined) samples.push(next);
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const last = sample();
      if (last !== undefined) samples.push(last);
      return new CpuTimeline(samples);
    },
  };
}
