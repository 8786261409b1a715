//! Percentiles of a sample and the growth exponent of a series.

use std::time::Duration;

/// Median and spread of a sample.
pub struct Stats {
    /// 50th percentile.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Smallest.
    pub min: Duration,
    /// Largest.
    pub max: Duration,
}

/// Percentiles of `samples` (sorted in place; must not be empty).
pub fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        p50: at(0.5),
        p99: at(0.99),
        min: samples[0],
        max: samples[samples.len() - 1],
    }
}

/// The growth exponent `b` of `y ≈ a·x^b`: the least-squares slope of `ln y` on `ln x`.
/// `None` with fewer than two distinct positive `x`, or any non-positive value.
pub fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 || points.iter().any(|&(x, y)| x <= 0.0 || y <= 0.0) {
        return None;
    }
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= f64::EPSILON {
        return None;
    }
    Some(sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_exponents() {
        let lin: Vec<(f64, f64)> = [8.0, 64.0, 256.0, 512.0]
            .iter()
            .map(|&x| (x, 3.0 * x))
            .collect();
        assert!((growth_exponent(&lin).unwrap() - 1.0).abs() < 1e-9);
        let quad: Vec<(f64, f64)> = [1.0, 2.0, 4.0].iter().map(|&x| (x, x * x)).collect();
        assert!((growth_exponent(&quad).unwrap() - 2.0).abs() < 1e-9);
        let flat = [(1.0, 5.0), (10.0, 5.0)];
        assert!(growth_exponent(&flat).unwrap().abs() < 1e-9);
        // Noise around x^1 still fits close to 1.
        let noisy = [(8.0, 8.4), (64.0, 61.0), (256.0, 262.0), (512.0, 500.0)];
        assert!((growth_exponent(&noisy).unwrap() - 1.0).abs() < 0.05);
    }

    #[test]
    fn fit_rejects_degenerate_input() {
        assert_eq!(growth_exponent(&[]), None);
        assert_eq!(growth_exponent(&[(1.0, 1.0)]), None);
        assert_eq!(growth_exponent(&[(2.0, 1.0), (2.0, 3.0)]), None);
        assert_eq!(growth_exponent(&[(0.0, 1.0), (2.0, 3.0)]), None);
        assert_eq!(growth_exponent(&[(1.0, -1.0), (2.0, 3.0)]), None);
    }
}
