//! The Prometheus text format (0.0.4): a family of samples with its `HELP`
//! and `TYPE`, and label sets written in order, values escaped.

use std::fmt::{Display, Write as _};

use shared::protocol::Field;

/// One metric family; written only when it has a sample, so a reading no
/// GPU reports leaves no empty family behind.
#[derive(Debug)]
pub struct Family {
    name: &'static str,
    help: &'static str,
    lines: String,
}

impl Family {
    /// A gauge (every series the agent exports is one: a reading now).
    pub fn gauge(name: &'static str, help: &'static str) -> Self {
        Self { name, help, lines: String::new() }
    }

    pub fn push(&mut self, labels: &Labels, value: impl Display) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.lines, "{}{{{}}} {value}", self.name, labels.0);
    }

    pub fn field<T: Copy + Display>(&mut self, labels: &Labels, value: &Field<T>) {
        if let Field::Value(v) = value {
            self.push(labels, *v);
        }
    }

    pub fn write(&self, out: &mut String) {
        if self.lines.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {} {}\n# TYPE {} gauge", self.name, self.help, self.name);
        out.push_str(&self.lines);
    }
}

/// A label set, in the order its labels were added.
#[derive(Debug, Clone, Default)]
pub struct Labels(String);

impl Labels {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name="value"`, the value escaped.
    pub fn with(mut self, name: &str, value: impl Display) -> Self {
        if !self.0.is_empty() {
            self.0.push(',');
        }
        let _ = write!(self.0, "{name}=\"{}\"", escape(&value.to_string()));
        self
    }

    /// Adds every label of `more`, after these.
    pub fn append(mut self, more: &Labels) -> Self {
        if !self.0.is_empty() && !more.0.is_empty() {
            self.0.push(',');
        }
        self.0.push_str(&more.0);
        self
    }

    /// Adds the label only when there is a value.
    pub fn with_some(self, name: &str, value: Option<impl Display>) -> Self {
        match value {
            Some(v) => self.with(name, v),
            None => self,
        }
    }
}

/// Label values escape `\`, `"` and newlines.
pub fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_ordered() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let l = Labels::new().with("b", 1).with("a", "x\"y").with_some("c", None::<u32>).with_some("d", Some(2));
        assert_eq!(l.0, "b=\"1\",a=\"x\\\"y\",d=\"2\"");
        let mut f = Family::gauge("m", "Help.");
        let mut out = String::new();
        f.write(&mut out);
        assert_eq!(out, "", "an empty family is not written");
        f.push(&l, 3);
        f.write(&mut out);
        assert_eq!(out, "# HELP m Help.\n# TYPE m gauge\nm{b=\"1\",a=\"x\\\"y\",d=\"2\"} 3\n");
    }
}
