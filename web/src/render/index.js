// sensorformer/render: canvas drawing of attention maps.
export { drawAttentionMap, mapLayout, cellAt, headWeights } from './attention-map.js';
export { viridis } from './colormap.js';
