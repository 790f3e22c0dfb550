// What bench/server.ts reads of Redis while it measures: the connections clients hold, and
// the CPU time of redis-server, on one server or on every node of a cluster.
import { createClient } from 'redis';

const SAMPLER_NAME = 'bench-sampler';

/** Counts the connections of Redis, or of every node of a cluster (but its own), and reads their CPU time. */
export async function openRedisSampler(urls: readonly string[]) {
  const clients = urls.map((url) => createClient({ url, name: SAMPLER_NAME }));
  await Promise.all(clients.map((client) => client.connect()));
  const sum = async (of: (client: (typeof clients)[number]) => Promise<number>) =>
    (await Promise.all(clients.map(of))).reduce((total, value) => total + value, 0);
  const connections = () =>
    sum(async (client) => {
      const list = String(await client.sendCommand(['CLIENT', 'LIST']));
      // A cluster node's bus links are not clients: CLIENT LIST lists the clients only.
      return list.split('\n').filter((line) => line.trim() !== '' && !line.includes(`name=${SAMPLER_NAME}`)).length;
    });
  const cpuMs = () =>
    sum(async (client) => {
      const info = String(await client.sendCommand(['INFO', 'cpu']));
      const seconds = (field: string) => Number(new RegExp(`${field}:([0-9.]+)`).exec(info)?.[1] ?? Number.NaN);
      return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1000;
    });
  return { connections, cpuMs, close: () => Promise.all(clients.map((client) => client.close())) };
}

export type RedisSampler = Awaited<ReturnType<typeof openRedisSampler>>;
