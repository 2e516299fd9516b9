// @ts-expect-error: the package ships no type declarations (its output is described below).
import parsePrometheusTextFormat from "parse-prometheus-text-format";

/** One sample of a family, as the parser gives it: values are strings. */
interface Sample {
  labels?: Record<string, string>;
  value?: string;
}
interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Sample[];
}

/**
 * GET /metrics text read by a real Prometheus text-format parser, with lookups by name and
 * labels. The parser merges the series of a labelled histogram into one sample without
 * labels, so histograms are also read with their TYPE lines made `untyped`: then it gives
 * their `_bucket`, `_sum` and `_count` series, labels and all.
 */
export class Exposition {
  readonly families: Map<string, Family>;
  /** Every series by its own name (a histogram's `_count` too), its samples from all its families. */
  readonly #series = new Map<string, Sample[]>();

  constructor(text: string) {
    this.families = new Map((parsePrometheusTextFormat(text) as Family[]).map((f) => [f.name, f]));
    const untyped = text.replace(/^# TYPE (\S+) histogram$/gm, "# TYPE $1 untyped");
    for (const family of parsePrometheusTextFormat(untyped) as Family[]) {
      this.#series.set(family.name, [...(this.#series.get(family.name) ?? []), ...family.metrics]);
    }
  }

  #sample(name: string, labels: Record<string, string>): Sample | undefined {
    const samples = this.#series.get(name);
    if (!samples) throw new Error(`no series ${name}`);
    return samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  }

  type(name: string): string | undefined {
    return this.families.get(name)?.type;
  }

  /** A counter's or gauge's value (0 when no sample has these labels). */
  value(name: string, labels: Record<string, string> = {}): number {
    return Number(this.#sample(name, labels)?.value ?? 0);
  }

  /** A histogram's count and sum (0 when no series has these labels); its +Inf bucket must be its count. */
  histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number } {
    if (this.type(name) !== "HISTOGRAM") throw new Error(`${name} is not a histogram`);
    // One never observed has no series at all.
    if (this.histogramSeries(name) === 0) return { count: 0, sum: 0 };
    const count = this.value(`${name}_count`, labels);
    if (this.value(`${name}_bucket`, { ...labels, le: "+Inf" }) !== count) {
      throw new Error(`${name}: the +Inf bucket is not the count`);
    }
    return { count, sum: this.value(`${name}_sum`, labels) };
  }

  /** How many series a histogram has (label sets observed). */
  histogramSeries(name: string): number {
    return this.#series.get(`${name}_count`)?.length ?? 0;
  }
}
