import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { DemoApp, type DemoAppProps } from './DemoApp';
import { loadStatelyInspector } from './statelyInspector';

const root = document.getElementById('root');
if (root === null) throw new Error('index.html has no #root element');
// The conversation reads `inspect` when it is made, on the first render: the inspector comes first.
const render = (statelyInspect?: DemoAppProps['statelyInspect']) =>
  createRoot(root).render(
    <StrictMode>
      <DemoApp statelyInspect={statelyInspect} />
    </StrictMode>,
  );
loadStatelyInspector(window.location.search).then(render, (error: unknown) => {
  console.warn('The Stately inspector did not load; the page runs without it.', error);
  render();
});
