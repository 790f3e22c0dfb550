import { Alert } from 'antd';

/**
 * With `?inspect`, says where the inspector is: `@statelyai/inspect` opens stately.ai in a
 * popup, and offline (or with popups blocked) that window shows only the browser's error
 * page, or nothing, with no word from the inspector itself.
 */
export function InspectorNote({ search }: { search: string }) {
  if (!new URLSearchParams(search).has('inspect')) return null;
  return (
    <Alert
      data-testid="inspector-note"
      type="info"
      showIcon
      title="?inspect opens the Stately inspector (stately.ai/inspect) in a popup window: it needs the internet and popups allowed for this page. Offline, that window shows an error page; this page works the same either way."
      style={{ margin: '12px 24px 0' }}
    />
  );
}
