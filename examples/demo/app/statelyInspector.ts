import type { InspectionEvent } from 'xstate';
import { sanitizeInspection } from '../../../machines/sanitizeInspection';

/**
 * With `?inspect` in the page's address, the Stately inspector (`@statelyai/inspect`, which
 * opens its own window) as an `inspect` function, sent sizes and statuses (`sanitizeInspection`)
 * rather than every AgentState the conversation goes through; otherwise undefined. Imported on
 * demand, so the page loads without it when nobody asked.
 */
export async function loadStatelyInspector(search: string): Promise<((event: InspectionEvent) => void) | undefined> {
  if (!new URLSearchParams(search).has('inspect')) return undefined;
  const { createBrowserInspector } = await import('@statelyai/inspect');
  return sanitizeInspection(createBrowserInspector().inspect);
}
