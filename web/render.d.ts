// Types for sensorformer/render. Hand-written; keep in step with web/src/render/.
import type { AttentionMap, Stream } from './index.js';

// --- attention maps (attention-map.js) ---------------------------------------------------------

/** Where the cells of a map are, in the units the map was drawn in (CSS pixels with pixelRatio). */
export interface MapLayout { x0: number; y0: number; cell: number; size: number; g: number }
export function mapLayout(width: number, height: number, g: number): MapLayout;
export function cellAt(layout: MapLayout, x: number, y: number): { query: number; key: number } | null;
export function headWeights(map: Pick<AttentionMap, 'weights' | 'dims'>, head: number | 'mean'): Float32Array;
/** The map with rows and columns in another order: order[i] = the old index of the new row/column i. */
export function reorderMap<M extends Pick<AttentionMap, 'weights' | 'dims'> & { tokens?: Int32Array }>(map: M, order: ArrayLike<number>): M & { weights: Float32Array; dims: [number, number, number] };

export interface AttentionMapOptions {
  /** A head index, or 'mean' for the mean over heads (default 0). */
  head?: number | 'mean';
  /** Row/column names, e.g. "ECG −3.2". */
  labels?: string[];
  /** Masked keys: hatched columns. */
  absent?: ArrayLike<boolean | number>;
  /** One cell outlined (e.g. a clicked one). */
  selected?: { query: number; key: number } | null;
  /** The hovered row and column, outlined. */
  hover?: { query?: number | null; key?: number | null } | null;
  /** CSS colours: a strip beside row and column i (e.g. one colour per sensor). */
  colors?: ArrayLike<string | null | undefined> | null;
  /** Top of the colour scale (default: the largest weight shown). */
  maxWeight?: number | null;
  /** Canvas pixels per CSS pixel (devicePixelRatio); margins, fonts and the layout are in CSS pixels. */
  pixelRatio?: number;
  background?: string;
  text?: string;
  /** CSS font of the labels (default '10px sans-serif'). */
  font?: string;
  /** Bottom-left caption (default 'query ↓  key →'); '' for none. */
  axisTitle?: string;
}
export function drawAttentionMap(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  map: Pick<AttentionMap, 'weights' | 'dims'>,
  options?: AttentionMapOptions,
): { layout: MapLayout; max: number; weights: Float32Array };
export function viridis(v: number): [number, number, number];

// --- live traces (traces.js) -------------------------------------------------------------------

/** Times in seconds (any scale, e.g. host epoch seconds); values: null / NaN = missing. */
export interface Series { times: ArrayLike<number>; values: ArrayLike<number | null> }

export interface TracePadding { top: number; right: number; bottom: number; left: number }
export const TRACE_PADDING: Readonly<TracePadding>;

export interface TraceLayout {
  x0: number; x1: number; y0: number; y1: number; t0: number; t1: number; lo: number; hi: number;
  x(t: number): number;
  y(v: number): number;
  time(x: number): number;
}

export interface TraceHighlight { t0: number; t1?: number; color: string; fill?: string; label?: string }

export interface TraceOptions {
  /** The visible time span (required). */
  t0: number;
  t1: number;
  /** Time the vertical grid lines count from (default t1), as drawTimeAxis's reference. */
  reference?: number;
  /** Value axis (default: autoRange over the visible samples with minSpan). */
  range?: [number, number];
  minSpan?: number;
  /** 'line' for regular streams; 'step' (held value, a dot per event) for event streams. */
  style?: 'line' | 'step';
  /** No line between present samples further apart than this (s). */
  maxStep?: number;
  /** Marked gaps (disconnects): hatched band + label; a third element true = still growing. */
  gaps?: Array<[number, number] | [number, number, boolean]>;
  gapLabel?: string;
  /** Runs of missing samples at least this long (s) get a faint band (default 0.25). */
  missingBand?: number;
  /** The model's input window: a faint band. */
  window?: { t0: number; t1: number } | null;
  highlights?: TraceHighlight[];
  color?: string; background?: string; grid?: string; text?: string;
  gapFill?: string; gapStroke?: string; gapText?: string; missingFill?: string; windowFill?: string;
  lineWidth?: number;
  padding?: TracePadding;
  /** Canvas pixels per CSS pixel (devicePixelRatio). */
  pixelRatio?: number;
}

export interface TraceResult {
  layout: TraceLayout;
  range: [number, number];
  /** Marked gaps visible in the span. */
  gaps: number;
  /** Faint bands drawn for runs of missing samples. */
  missing: number;
  /** Present samples drawn. */
  points: number;
  /** The newest present sample drawn. */
  last: { t: number; v: number } | null;
}

/** A model stream (regular or event-driven) or a Series -> Float64Arrays with NaN for missing. */
export function seriesFromStream(stream: Stream | Series | null | undefined): { times: Float64Array; values: Float64Array };
export function autoRange(series: Series, options?: { t0?: number; t1?: number; minSpan?: number; pad?: number }): [number, number] | null;
export function traceLayout(width: number, height: number, options: { t0: number; t1: number; range: [number, number]; padding?: TracePadding }): TraceLayout;
export function drawTrace(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  series: Series | Stream,
  options: TraceOptions,
): TraceResult;
/** Tick labels in seconds relative to `reference` (default t1), or by format(t). */
export function drawTimeAxis(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  options: { t0: number; t1: number; reference?: number; padding?: TracePadding; color?: string; background?: string | null; format?: ((t: number) => string) | null; unit?: string; pixelRatio?: number },
): { layout: TraceLayout; ticks: number[] };
/** A 1/2/5 x 10^k step giving ticks at least minPixels apart. */
export function tickStep(span: number, pixels: number, minPixels?: number): number;
