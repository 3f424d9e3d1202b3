//! Every engine's settings as the CLI's flags, built from the engines' own
//! declarations (`shared::engines::knobs`): this file names no engine and no
//! setting. A flag two engines declare alike (`--n-cpu-moe`, `--host-ram`)
//! is one flag; its help names the engines that take it. Each value is read
//! by the setting's own reader, the one links and the page use, so every
//! front end takes the same spellings.

use anyhow::{Context, bail};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use shared::engines::knobs::About;
use shared::engines::{Engine, EngineKind};

/// What one flag sets: in which engine, which setting, and the value a
/// switch stands for (`None`: the flag's own value).
#[derive(Debug, Clone, Copy)]
struct Target {
    kind: EngineKind,
    about: &'static About,
    switch: Option<(&'static str, &'static str)>,
}

impl Target {
    fn help(&self) -> &'static str {
        self.switch.map_or(self.about.cli.help, |(_, help)| help)
    }
}

/// One flag of the command line and every setting it sets.
#[derive(Debug)]
struct Flag {
    name: &'static str,
    short: Option<char>,
    aliases: Vec<&'static str>,
    targets: Vec<Target>,
}

impl Flag {
    fn takes_value(&self) -> bool {
        self.targets.iter().any(|t| t.switch.is_none())
    }

    fn repeats(&self) -> bool {
        self.targets.iter().any(|t| t.about.cli.repeats)
    }

    /// "vLLM: … ; SGLang: …", engines with the same help written once.
    fn help(&self) -> String {
        let mut parts: Vec<(Vec<&str>, &str, &[&str])> = Vec::new();
        for t in &self.targets {
            let choices = if t.switch.is_none() { t.about.choices } else { &[] };
            match parts.iter_mut().find(|(_, help, _)| *help == t.help()) {
                Some((names, _, _)) => names.push(t.kind.name()),
                None => parts.push((vec![t.kind.name()], t.help(), choices)),
            }
        }
        let part = |(names, help, choices): &(Vec<&str>, &str, &[&str])| match choices.is_empty() {
            true => format!("{}: {help}", names.join(", ")),
            false => format!("{}: {help} [{}]", names.join(", "), choices.join(", ")),
        };
        parts.iter().map(part).collect::<Vec<_>>().join("; ")
    }
}

/// Every engine's flags, in the engines' order and each engine's
/// declaration order.
fn flags() -> Vec<Flag> {
    let mut flags: Vec<Flag> = Vec::new();
    let mut add =
        |name: &'static str, short: Option<char>, target: Target| match flags.iter_mut().find(|f| f.name == name) {
            Some(f) => f.targets.push(target),
            None => flags.push(Flag { name, short, aliases: Vec::new(), targets: vec![target] }),
        };
    let settings =
        || EngineKind::ALL.iter().flat_map(|&kind| kind.settings().into_iter().map(move |about| (kind, about)));
    for (kind, about) in settings() {
        let cli = &about.cli;
        if !cli.flag.is_empty() {
            add(cli.flag, cli.short, Target { kind, about, switch: None });
        }
        for &(name, value, help) in cli.switches {
            add(name, None, Target { kind, about, switch: Some((value, help)) });
        }
    }
    // An alias that is another flag's name joins that flag (SGLang's
    // `--max-num-batched-tokens` is vLLM's flag); else it names this one.
    for (kind, about) in settings() {
        for &alias in about.cli.aliases {
            match flags.iter().position(|f| f.name == alias) {
                Some(i) => flags[i].targets.push(Target { kind, about, switch: None }),
                None => {
                    if let Some(f) = flags.iter_mut().find(|f| f.name == about.cli.flag) {
                        f.aliases.push(alias);
                    }
                }
            }
        }
    }
    flags
}

/// The engine flags given on the command line, with their values.
#[derive(Debug, Clone, Default)]
pub struct EngineFlags {
    given: Vec<Given>,
}

/// One flag given: its name, what it sets and its values (none for a switch).
#[derive(Debug, Clone)]
struct Given {
    name: &'static str,
    targets: Vec<Target>,
    values: Vec<String>,
}

impl Args for EngineFlags {
    fn augment_args(cmd: Command) -> Command {
        flags().into_iter().fold(cmd, |cmd, f| {
            let mut arg = Arg::new(f.name).long(f.name).help(f.help()).visible_aliases(f.aliases.clone());
            if let Some(c) = f.short {
                arg = arg.short(c);
            }
            arg = match (f.takes_value(), f.repeats()) {
                (true, true) => arg.action(ArgAction::Append).value_name("VALUE"),
                (true, false) => arg.action(ArgAction::Set).value_name("VALUE"),
                (false, _) => arg.action(ArgAction::SetTrue),
            };
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for EngineFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = Self::default();
        flags.update_from_arg_matches(m)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.given.clear();
        for f in flags() {
            let values = match f.takes_value() {
                true => m.get_many::<String>(f.name).map(|v| v.cloned().collect()),
                false => m.get_flag(f.name).then(Vec::new),
            };
            if let Some(values) = values {
                self.given.push(Given { name: f.name, targets: f.targets, values });
            }
        }
        Ok(())
    }
}

impl EngineFlags {
    /// The engine `kind` with its defaults and every flag given set, in the
    /// order it declares its settings (a flag's value before its switches:
    /// `--mmproj --no-mmproj-offload` is the projector on the CPU).
    /// `host_ram` reads this host's RAM for `auto`.
    pub fn engine(&self, kind: EngineKind, host_ram: impl Fn() -> anyhow::Result<u64>) -> anyhow::Result<Engine> {
        for Given { name, targets, .. } in &self.given {
            if !targets.iter().any(|t| t.kind == kind) {
                let mut takers: Vec<&str> = targets.iter().map(|t| t.kind.name()).collect();
                takers.dedup();
                bail!("--{name} is a setting of {}; this plan runs {}", takers.join(" and "), kind.name());
            }
        }
        let mut engine = kind.with_defaults();
        for about in kind.settings() {
            for Given { name, targets, values } in &self.given {
                for t in targets.iter().filter(|t| t.kind == kind && std::ptr::eq(t.about, about)) {
                    let value = match t.switch {
                        Some((value, _)) => value.to_owned(),
                        None if about.cli.repeats => values.join(","),
                        None => values.last().cloned().unwrap_or_default(),
                    };
                    let cli = &about.cli;
                    if !cli.default_word.is_empty() && value.trim().eq_ignore_ascii_case(cli.default_word) {
                        continue;
                    }
                    let value = match cli.host_ram && value.trim() == "auto" {
                        true => format!("{}B", host_ram().with_context(|| format!("--{name} auto"))?),
                        false => value,
                    };
                    engine
                        .set_setting(about.key, &value)
                        .map_err(|why| anyhow::anyhow!("--{name} `{value}`: {why}"))?;
                }
            }
        }
        Ok(engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap refuses two arguments of one name: each flag is built once,
    /// a flag is either a switch or takes a value in every engine, and
    /// every setting the CLI can reach has a flag or a switch.
    #[test]
    fn the_flags_are_one_per_name_and_cover_every_setting_with_cli_words() {
        let all = flags();
        let mut names: Vec<&str> = all.iter().flat_map(|f| std::iter::once(f.name).chain(f.aliases.clone())).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a flag name is used twice");
        for f in &all {
            assert!(
                f.targets.iter().all(|t| t.switch.is_none()) || f.targets.iter().all(|t| t.switch.is_some()),
                "--{} is a switch in one engine and takes a value in another",
                f.name
            );
            assert!(!f.help().is_empty(), "--{} has no help", f.name);
        }
        EngineFlags::augment_args(Command::new("t")).debug_assert();
    }

    #[test]
    fn a_flag_of_another_engine_is_refused_by_name() {
        let cmd = EngineFlags::augment_args(Command::new("t"));
        let m = cmd.try_get_matches_from(["t", "--max-model-len", "4096"]).expect("parses");
        let flags = EngineFlags::from_arg_matches(&m).expect("reads");
        let err = flags.engine(EngineKind::LlamaCpp, || Ok(0)).expect_err("not llama.cpp's");
        assert_eq!(err.to_string(), "--max-model-len is a setting of vLLM; this plan runs llama.cpp");
        let e = flags.engine(EngineKind::Vllm, || Ok(0)).expect("vLLM's");
        assert_eq!(e.setting("mml").as_deref(), Some("4096"));
    }
}
