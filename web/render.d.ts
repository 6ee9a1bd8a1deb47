// Types for sensorformer/render. Hand-written; keep in step with web/src/render/.
import type { AttentionMap } from './index.js';

export interface MapLayout { x0: number; y0: number; cell: number; size: number; g: number }
export function mapLayout(width: number, height: number, g: number): MapLayout;
export function cellAt(layout: MapLayout, x: number, y: number): { query: number; key: number } | null;
export function headWeights(map: AttentionMap, head: number | 'mean'): Float32Array;
export function drawAttentionMap(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  map: AttentionMap,
  options?: { head?: number | 'mean'; labels?: string[]; absent?: ArrayLike<boolean | number>; selected?: { query: number; key: number } | null; background?: string; text?: string },
): { layout: MapLayout; max: number; weights: Float32Array };
export function viridis(v: number): [number, number, number];
