import type { Registry } from "prom-client";

/** One label set's counts. */
class Series {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  /** Counts `value` (seconds) in its bucket: a scan of a dozen numbers, nothing allocated. */
  observe(value: number): void {
    const { bounds, counts } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    if (i < counts.length) counts[i] = (counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

export type HistogramSeries = Pick<Series, "observe">;

/**
 * A histogram for what every run observes (commits, deliveries, model requests, tool calls),
 * registered in a prom-client registry and exposed like its own: a label set is bound once
 * (`series`, or `at` at its first use) and an observation only adds to its bucket, where
 * prom-client's `observe` validates and hashes its labels every time.
 */
export class FastHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #series: Series[] = [];
  /** The series made by `at`, by their label values. */
  readonly #byValues = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The series of `labels`, to observe into. */
  series(labels: Record<string, string> = {}): HistogramSeries {
    const series = new Series(labels, this.bounds);
    this.#series.push(series);
    return series;
  }

  /**
   * The series of `labels`, made at its first use (a label set is exposed once observed, as
   * prom-client's are): for label values known only when observing, such as a tool's name.
   */
  at(labels: Record<string, string>): HistogramSeries {
    const key = Object.values(labels).join("\u0000");
    let series = this.#byValues.get(key);
    if (!series) {
      series = new Series(labels, this.bounds);
      this.#series.push(series);
      this.#byValues.set(key, series);
    }
    return series;
  }

  /** What the registry exposes: per series, the cumulative buckets, the sum and the count. */
  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const series of this.#series) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i] as number;
        values.push({ labels: { le: bound, ...series.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: "+Inf", ...series.labels }, value: series.count, metricName: `${this.name}_bucket` });
      values.push({ labels: series.labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: series.labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const series of this.#series) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
