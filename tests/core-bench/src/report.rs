//! Markdown tables.

/// A GitHub-flavoured markdown table.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut out = line(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    out.push_str(&line(&vec!["---".to_string(); headers.len()]));
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// A number with `decimals` decimals, or with none from 100 up (`1234`, `12.3`, `1.23`).
pub fn num(x: f64, decimals: usize) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.decimals$}")
    }
}

/// Bytes as `B`, `KB` or `MB` (powers of 1,000, as the other tables of docs/benchmarks.md).
pub fn bytes(b: f64) -> String {
    if b >= 1e6 {
        format!("{} MB", num(b / 1e6, 1))
    } else if b >= 1e3 {
        format!("{} KB", num(b / 1e3, 1))
    } else {
        format!("{b:.0} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        let t = table(
            &["a", "b"],
            &[vec!["1".into(), "2".into()], vec!["x".into(), "".into()]],
        );
        assert_eq!(t, "| a | b |\n| --- | --- |\n| 1 | 2 |\n| x |  |\n");
    }

    #[test]
    fn numbers() {
        assert_eq!(num(1234.4, 2), "1234");
        assert_eq!(num(12.345, 1), "12.3");
        assert_eq!(num(1.234, 2), "1.23");
        assert_eq!(bytes(150_123.0), "150 KB");
        assert_eq!(bytes(2_300.0), "2.3 KB");
        assert_eq!(bytes(812.0), "812 B");
        assert_eq!(bytes(3_400_000.0), "3.4 MB");
    }
}
