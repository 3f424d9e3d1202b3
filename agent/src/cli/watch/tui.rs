//! The full-screen view, for a person at a terminal: per-GPU memory bars
//! and timelines, the processes, and the findings, redrawn in place each
//! refresh (ratatui over crossterm). `q`, Esc or Ctrl-C leaves and restores
//! the terminal.

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph, Sparkline, Wrap};
use ratatui::{DefaultTerminal, Frame};
use shared::protocol::FindingCertainty;
use tokio::sync::mpsc;

use super::view::{View, bytes, clock, headline};

/// The terminal in full-screen mode; restored when dropped.
pub struct Screen {
    terminal: DefaultTerminal,
}

impl Screen {
    /// Enters the alternate screen and raw mode (ratatui also restores the
    /// terminal if the program panics).
    pub fn enter() -> Self {
        Self { terminal: ratatui::init() }
    }

    pub fn draw(&mut self, view: &View) -> std::io::Result<()> {
        self.terminal.draw(|f| draw(f, view)).map(drop)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// A key that asks to leave, sent from a thread of its own (reading keys blocks).
pub fn quit_keys() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel(1);
    let _ = std::thread::Builder::new().name("headroom-keys".into()).spawn(move || {
        while let Ok(e) = event::read() {
            if let Event::Key(k) = e
                && k.kind == KeyEventKind::Press
                && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                    || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
            {
                let _ = tx.blocking_send(());
                return;
            }
        }
    });
    rx
}

fn draw(f: &mut Frame, v: &View) {
    let per_gpu = 3u16;
    let gpus_height = per_gpu * v.gpus.len() as u16 + 2;
    let [title, gpus, findings] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(gpus_height), Constraint::Min(3)]).areas(f.area());
    let label = format!(
        " headroom watch · {}{} · {} · q quits",
        v.hostname,
        if v.simulated { " · SIMULATED" } else { "" },
        clock(v.timestamp_ms)
    );
    f.render_widget(Paragraph::new(label).style(Style::new().add_modifier(Modifier::BOLD)), title);

    let block = Block::bordered().title(" GPUs ");
    let inner = block.inner(gpus);
    f.render_widget(block, gpus);
    let rows = Layout::vertical(v.gpus.iter().map(|_| Constraint::Length(per_gpu))).split(inner);
    for (g, row) in v.gpus.iter().zip(rows.iter()) {
        let [gauge, line, procs] = Layout::vertical([Constraint::Length(1); 3]).areas(*row);
        let ratio = (g.used_bytes as f64 / g.total_bytes.max(1) as f64).clamp(0.0, 1.0);
        let color = if ratio >= 0.9 {
            Color::Red
        } else if ratio >= 0.75 {
            Color::Yellow
        } else {
            Color::Green
        };
        let text = format!(
            "GPU {} {} · {} / {}{}",
            g.index,
            g.name,
            bytes(g.used_bytes),
            bytes(g.total_bytes),
            g.busy_pct.map(|b| format!(" · busy {b} %")).unwrap_or_default()
        );
        f.render_widget(Gauge::default().ratio(ratio).label(text).gauge_style(Style::new().fg(color)), gauge);
        f.render_widget(Sparkline::default().data(&g.timeline).max(1000).style(Style::new().fg(color)), line);
        let list: Vec<String> = g
            .processes
            .iter()
            .map(|p| {
                let held = p.used_bytes.map(bytes).unwrap_or_else(|| "?".into());
                let launch = p.launch_text();
                if launch.is_empty() {
                    format!("{} {} {held}", p.pid, p.name)
                } else {
                    format!("{} {} {held} ({launch})", p.pid, p.name)
                }
            })
            .collect();
        let list = if list.is_empty() { "no process".to_owned() } else { list.join(" · ") };
        f.render_widget(Paragraph::new(list).style(Style::new().fg(Color::Gray)), procs);
    }

    let mut lines = Vec::new();
    if v.findings.is_empty() {
        lines.push(Line::from("No finding: the readings show none of the OOM checklist's causes."));
    }
    for s in &v.findings {
        let color = match s.finding.certainty {
            FindingCertainty::Likely => Color::Red,
            _ => Color::Yellow,
        };
        lines.push(Line::from(Span::styled(headline(&s.finding), Style::new().fg(color).add_modifier(Modifier::BOLD))));
        lines.push(Line::from(s.finding.evidence.clone()));
        lines.push(Line::from(vec![
            Span::styled("Fix: ", Style::new().add_modifier(Modifier::BOLD)),
            s.finding.fix.clone().into(),
        ]));
        for note in &s.notes {
            lines.push(Line::from(vec![
                Span::styled("Plan: ", Style::new().add_modifier(Modifier::BOLD)),
                note.clone().into(),
            ]));
        }
        lines.push(Line::from(""));
    }
    let block = Block::bordered().title(" Findings (the OOM checklist on these readings) ");
    f.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: true }), findings);
}
