// sensorformer/render: canvas drawing of attention maps and live signal traces.
export { drawAttentionMap, mapLayout, cellAt, headWeights, reorderMap, tokenLabels } from './attention-map.js';
export {
  drawTrace, drawTimeAxis, seriesFromStream, autoRange, traceLayout, tickStep, valueTicks, formatTick,
  tracePadding, resolveTheme, THEMES, TRACE_PADDING, VALUE_AXIS_WIDTH, TIME_AXIS_HEIGHT,
} from './traces.js';
export { viridis } from './colormap.js';
