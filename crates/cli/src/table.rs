//! Plain-text tables for people: left-aligned labels, right-aligned figures.

use core::fmt::Write as _;

/// A table of text cells; the first row is the header.
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
    /// Columns from this one on hold figures, right-aligned even where a cell is words
    /// (`none finished`).
    figures_from: Option<usize>,
}

impl Table {
    pub(crate) fn new(header: Vec<String>) -> Self {
        Self {
            rows: vec![header],
            figures_from: None,
        }
    }

    /// Right-aligns every column from `col` on, whatever its cells look like.
    pub(crate) fn figures_from(&mut self, col: usize) {
        self.figures_from = Some(col);
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns and a dashed rule under the header. A column
    /// whose cells all start like a number, or one [`figures_from`](Self::figures_from) names,
    /// is right-aligned, any other left-aligned.
    pub(crate) fn render(&self) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut width = vec![0; cols];
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let numeric: Vec<bool> = (0..cols)
            .map(|i| {
                self.figures_from.is_some_and(|from| i >= from)
                    || self.rows[1..].iter().all(|row| {
                        row.get(i).is_none_or(|c| {
                            c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '+')
                        })
                    })
            })
            .collect();
        let mut out = String::new();
        for (r, row) in self.rows.iter().enumerate() {
            let mut line = String::new();
            for (i, w) in width.iter().enumerate() {
                let cell = row.get(i).map_or("", String::as_str);
                let sep = if i == 0 { "" } else { "  " };
                if numeric[i] && i > 0 {
                    let _ = write!(line, "{sep}{cell:>w$}");
                } else {
                    let _ = write!(line, "{sep}{cell:<w$}");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if r == 0 {
                let total: usize = width.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(vec!["metric".into(), "a".into(), "bb".into()]);
        t.row(vec!["makespan".into(), "1.5".into(), "10.25".into()]);
        t.row(vec!["kind".into(), "p".into(), "-".into()]);
        let text = t.render();
        assert_eq!(
            text,
            "metric    a       bb\n--------------------\nmakespan  1.5  10.25\nkind      p        -\n"
        );
    }
}
