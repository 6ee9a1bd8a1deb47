// sensorformer/render: canvas drawing of attention maps and live signal traces.
export { drawAttentionMap, mapLayout, cellAt, headWeights, reorderMap } from './attention-map.js';
export { drawTrace, drawTimeAxis, seriesFromStream, autoRange, traceLayout, tickStep, TRACE_PADDING } from './traces.js';
export { viridis } from './colormap.js';
