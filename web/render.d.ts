// Types for sensorformer/render. Hand-written; keep in step with web/src/render/.
import type { AttentionMap, ForwardResult, Stream } from './index.js';

// --- themes (traces.js; drawAttentionMap uses background and text) ------------------------------

/** Every colour a trace uses (CSS colours). */
export interface ThemeColors {
  color: string; background: string; grid: string; axis: string; text: string;
  gapFill: string; gapStroke: string; gapText: string; missingFill: string; windowFill: string;
}
/**
 * 'auto' (the default everywhere): 'dark' when the page prefers a dark colour scheme
 * (matchMedia('(prefers-color-scheme: dark)')), else 'light' (also where there is no matchMedia,
 * e.g. a Worker). An object: its colours over the theme named by `base` (default 'auto').
 */
export type ThemeName = 'dark' | 'light' | 'auto';
export type Theme = ThemeName | (Partial<ThemeColors> & { base?: ThemeName });
export const THEMES: Readonly<{ dark: Readonly<ThemeColors>; light: Readonly<ThemeColors> }>;
/** SensorformerError INVALID_ARGUMENT for an unknown theme name. */
export function resolveTheme(theme?: Theme): ThemeColors;

// --- attention maps (attention-map.js) ---------------------------------------------------------

/**
 * Where the cells of a map are, in the units the map was drawn in (CSS pixels with pixelRatio):
 * g x g cells of cellWidth x cellHeight from (x0, y0), width x height in all. cell and size: the
 * smaller side of a cell and of the map (for square maps, the cell and the side).
 */
export interface MapLayout {
  x0: number; y0: number; cellWidth: number; cellHeight: number; width: number; height: number; g: number;
  cell: number; size: number;
}
export interface MapMargins { left: number; top: number; right: number; bottom: number }
/** fit 'fill' (default): cells fill the canvas inside the margins; 'square': square cells, centred. SensorformerError INVALID_ARGUMENT otherwise. */
export function mapLayout(width: number, height: number, g: number, options?: { margins?: MapMargins; fit?: 'fill' | 'square' }): MapLayout;
export function cellAt(layout: MapLayout, x: number, y: number): { query: number; key: number } | null;
export function headWeights(map: Pick<AttentionMap, 'weights' | 'dims'>, head: number | 'mean'): Float32Array;
/** The map with rows and columns in another order: order[i] = the old index of the new row/column i. */
export function reorderMap<M extends Pick<AttentionMap, 'weights' | 'dims'> & { tokens?: Int32Array }>(map: M, order: ArrayLike<number>): M & { weights: Float32Array; dims: [number, number, number] };

/**
 * Axis labels for a map's rows and columns: "<modality> <t> s", t in seconds after `reference`
 * (default: the earliest token's time). group: an AttentionMap (its tokens), token indices, or
 * null for all tokens. A modality fed by several streams gets "#<stream>".
 * SensorformerError: INVALID_ARGUMENT when tokens is not a forward result's tokens,
 * INDEX_OUT_OF_RANGE for an index out of range.
 */
export function tokenLabels(
  tokens: ForwardResult['tokens'],
  group?: Pick<AttentionMap, 'tokens'> | ArrayLike<number> | null,
  /** digits: decimals of the time, an integer 0-20 (default 1). */
  options?: { reference?: number; names?: Partial<Record<string, string>>; digits?: number },
): string[];

export interface AttentionMapOptions {
  /** A head index, or 'mean' for the mean over heads (default 0). */
  head?: number | 'mean';
  /** Row/column names, e.g. "ECG 3.2 s" (tokenLabels). */
  labels?: string[];
  /** Masked keys: hatched columns. */
  absent?: ArrayLike<boolean | number>;
  /** One cell outlined (e.g. a clicked one). */
  selected?: { query: number; key: number } | null;
  /** The hovered row and column, outlined. */
  hover?: { query?: number | null; key?: number | null } | null;
  /** CSS colours: a strip beside row and column i (e.g. one colour per sensor). */
  colors?: ArrayLike<string | null | undefined> | null;
  /** Top of the colour scale (default: the largest weight shown; NaN weights draw as 0); a finite number > 0. */
  maxWeight?: number | null;
  /** Canvas pixels per CSS pixel (devicePixelRatio, 0.1-16); margins, fonts and the layout are in CSS pixels. */
  pixelRatio?: number;
  /** Colours of background and text (default 'auto': follows the page's colour scheme). */
  theme?: Theme;
  /** Over the theme's. */
  background?: string;
  text?: string;
  /** CSS font of the labels (default '10px sans-serif'); the margins are measured in it. */
  font?: string;
  /** Bottom-left caption (default 'query ↓  key →'); '' for none. */
  axisTitle?: string;
  /** 'fill' (default): the map takes the whole canvas beside its labels; 'square': square cells. */
  fit?: 'fill' | 'square';
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
/** Padding of a trace drawn without axes. */
export const TRACE_PADDING: Readonly<TracePadding>;
/** Default value-axis gutter (CSS px). */
export const VALUE_AXIS_WIDTH: number;
/** Height of the time-axis strip drawTrace draws under the plot (CSS px). */
export const TIME_AXIS_HEIGHT: number;
/** drawTrace's default padding for these options (drawTimeAxis's too, with timeAxis false). */
export function tracePadding(options?: { valueAxis?: boolean; timeAxis?: boolean; axisWidth?: number }): TracePadding;
/**
 * Value-axis ticks over [lo, hi] drawn `pixels` tall: multiples of a 1/2/5 x 10^k step at least
 * minPixels (default 20) apart, or a smaller step down to 0.6 x minPixels when that leaves fewer
 * than two. No ticks (step NaN) for an empty or non-finite range.
 */
export function valueTicks(lo: number, hi: number, pixels: number, minPixels?: number): { step: number; decimals: number; ticks: number[] };
/** A tick value with `decimals` digits and a true minus sign; never "−0". */
export function formatTick(value: number, decimals?: number): string;

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
  /** Colours (default 'auto': follows the page's prefers-color-scheme); the single colours below override it. */
  theme?: Theme;
  color?: string; background?: string; grid?: string; axis?: string; text?: string;
  gapFill?: string; gapStroke?: string; gapText?: string; missingFill?: string; windowFill?: string;
  lineWidth?: number;
  /** A value axis with 1/2/5 x 10^k ticks in a left gutter (default true). */
  valueAxis?: boolean;
  /** Width of that gutter in CSS px (default VALUE_AXIS_WIDTH). */
  axisWidth?: number;
  /** Written after the top tick's value, e.g. 'µV'. */
  units?: string;
  /** Time ticks under the plot (default true); false when a column of traces shares one drawTimeAxis. */
  timeAxis?: boolean;
  /** Time tick labels (default: seconds relative to `reference`); unit after the 0 (default 's'). */
  format?: ((t: number) => string) | null;
  unit?: string;
  /** Default tracePadding({ valueAxis, timeAxis, axisWidth }). */
  padding?: TracePadding;
  /** Canvas pixels per CSS pixel (devicePixelRatio, 0.1-16). */
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
  /** Value-axis ticks drawn ([] without a value axis). */
  ticks: number[];
  /** Times of the time-axis ticks drawn ([] without a time axis). */
  timeTicks: number[];
  /** The colours used. */
  theme: ThemeColors;
}

/** A model stream (regular or event-driven) or a Series -> Float64Arrays with NaN for missing. */
export function seriesFromStream(stream: Stream | Series | null | undefined): { times: Float64Array; values: Float64Array };
export function autoRange(series: Series, options?: { t0?: number; t1?: number; minSpan?: number; pad?: number }): [number, number] | null;
export function traceLayout(width: number, height: number, options: { t0: number; t1: number; range: [number, number]; padding?: TracePadding }): TraceLayout;
/**
 * Draws a trace into the whole canvas. SensorformerError INVALID_ARGUMENT (nothing drawn) unless
 * t0 < t1 are finite, for a range that is not finite lo < hi, a reference that is not finite, a
 * pixelRatio outside 0.1-16, gaps / highlights that are not arrays, and an unknown theme.
 */
export function drawTrace(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  series: Series | Stream,
  options: TraceOptions,
): TraceResult;
/**
 * Tick labels in seconds relative to `reference` (default t1), or by format(t), for traces drawn
 * with the same t0, t1, valueAxis and axisWidth (so the ticks line up). SensorformerError
 * INVALID_ARGUMENT unless t0 < t1 and reference are finite and pixelRatio is 0.1-16.
 */
export function drawTimeAxis(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  options: {
    t0: number; t1: number; reference?: number; valueAxis?: boolean; axisWidth?: number; padding?: TracePadding;
    theme?: Theme; color?: string; background?: string | null; format?: ((t: number) => string) | null; unit?: string; pixelRatio?: number;
  },
): { layout: TraceLayout; ticks: number[] };
/** A 1/2/5 x 10^k step giving ticks at least minPixels apart. */
export function tickStep(span: number, pixels: number, minPixels?: number): number;
