//! `--svg FILE`: throughput against threads, one line per implementation, one panel per
//! limiter × scenario. The floor has no panel of its own: it is a black line in every
//! panel, so each limiter's distance from it shows (the y axis stretches to hold it).

use std::path::Path;

use plotters::prelude::*;

use crate::limiters::Implementation;
use crate::report::Row;
use crate::scenario::Scenario;

/// Pixels of one panel.
const PANEL: (u32, u32) = (420, 300);

/// One colour per implementation, in [`Implementation::ALL`] order.
const COLOURS: [RGBColor; 7] = [
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
    RGBColor(0, 0, 0),
];

/// Writes the chart of `rows` to `path`, titled `title`. Thread counts above `cores` are
/// starred on the axis.
pub fn write(
    path: &Path,
    title: &str,
    rows: &[Row],
    cores: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let floor = |r: &&Row| r.implementation == Implementation::Floor;
    let mut limiters: Vec<&str> = Vec::new();
    for row in rows.iter().filter(|r| !floor(r)) {
        if !limiters.contains(&row.limiter) {
            limiters.push(row.limiter);
        }
    }
    let scenarios: Vec<Scenario> = Scenario::ALL
        .into_iter()
        .filter(|s| rows.iter().any(|r| r.scenario == *s && !floor(&r)))
        .collect();
    let (rows_n, cols_n) = (limiters.len().max(1), scenarios.len().max(1));
    let size = (PANEL.0 * cols_n as u32, PANEL.1 * rows_n as u32 + 40);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let body = root.titled(title, ("sans-serif", 16))?;
    let panels = body.split_evenly((rows_n, cols_n));
    // The x axis is categorical: position i is the i-th smallest thread count.
    let mut threads: Vec<usize> = rows.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let position = |t: usize| threads.iter().position(|&x| x == t).unwrap_or(0) as f64;
    let label = |x: &f64| {
        let i = x.round();
        match threads.get(i as usize) {
            Some(t) if (x - i).abs() < 1e-6 && i >= 0.0 => {
                format!("{t}{}", if *t > cores { "*" } else { "" })
            }
            _ => String::new(),
        }
    };
    let last = threads.len().saturating_sub(1) as f64;
    for (i, limiter) in limiters.iter().enumerate() {
        for (j, scenario) in scenarios.iter().enumerate() {
            let Some(panel) = panels.get(i * cols_n + j) else {
                continue;
            };
            let cell: Vec<&Row> = rows
                .iter()
                .filter(|r| (r.limiter == *limiter && r.scenario == *scenario) || floor(r))
                .collect();
            // Headroom above the data for the legend.
            let top = cell.iter().map(|r| r.mops).fold(0.0, f64::max) * 1.6 + 1e-3;
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!("{limiter} / {}", scenario.name()),
                    ("sans-serif", 14),
                )
                .margin(8)
                .x_label_area_size(28)
                .y_label_area_size(44)
                .build_cartesian_2d(-0.5..last + 0.5, 0.0..top)?;
            chart
                .configure_mesh()
                .x_desc("threads (* oversubscribed)")
                .y_desc("Mops/s")
                .x_labels(2 * threads.len() + 1)
                .x_label_formatter(&label)
                .max_light_lines(1)
                .disable_x_mesh()
                .draw()?;
            for (implementation, colour) in Implementation::ALL.into_iter().zip(COLOURS) {
                let mut points: Vec<(f64, f64)> = cell
                    .iter()
                    .filter(|r| r.implementation == implementation)
                    .map(|r| (position(r.threads), r.mops))
                    .collect();
                if points.is_empty() {
                    continue;
                }
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                chart
                    .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?
                    .label(implementation.name())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                    });
                chart.draw_series(
                    points
                        .into_iter()
                        .map(|point| Circle::new(point, 3, colour.filled())),
                )?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .label_font(("sans-serif", 11))
                .draw()?;
        }
    }
    root.present()?;
    Ok(())
}
