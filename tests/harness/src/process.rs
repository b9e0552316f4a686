//! Child processes whose output goes to a log file and which die with the test.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running child process. Killed (SIGKILL) and reaped on drop. It also gets SIGKILL from the
/// kernel if the thread that started it dies (`PR_SET_PDEATHSIG`), so a test binary killed
/// outright does not leave it behind.
#[derive(Debug)]
pub struct Process {
    pub name: String,
    pub log: PathBuf,
    child: Child,
}

impl Process {
    /// Starts `program args...` with stdout and stderr appended to `log`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        envs: &[(&str, &str)],
        log: PathBuf,
    ) -> Result<Process> {
        let file = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("creating log file {}", log.display()))?;
        let err = file.try_clone()?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {name} ({})", program.display()))?;
        Ok(Process {
            name: name.to_owned(),
            log,
            child,
        })
    }

    /// Fails if the process has exited, quoting the end of its log.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited ({status}); log {}:\n{}",
                self.name,
                self.log.display(),
                tail(&self.log, 40)
            );
        }
        Ok(())
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of a file (best effort).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Loopback ports handed out by this process, so that testbeds started in parallel never get
/// the same one even before their processes bind it.
static TAKEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> Result<u16> {
    for _ in 0..100 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("binding a loopback port")?;
        let port = l.local_addr()?.port();
        let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
        if !taken.contains(&port) {
            taken.push(port);
            return Ok(port);
        }
    }
    bail!("no free loopback port found")
}

/// `GET path` over plain HTTP/1.0 on 127.0.0.1:port; the status code and body.
pub fn http_get(port: u16, path: &str) -> Result<(u16, String)> {
    http_get_at((Ipv4Addr::LOCALHOST, port).into(), path)
}

/// `GET path` over plain HTTP/1.0 at `addr` (a pod's, say); the status code and body.
pub fn http_get_at(addr: std::net::SocketAddr, path: &str) -> Result<(u16, String)> {
    use std::io::Write;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", addr.ip())?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("malformed HTTP response")?;
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Polls `check` every 100 ms until it returns `Ok(true)`, the process dies, or `timeout`.
pub async fn wait_until<F>(
    what: &str,
    proc: &mut Process,
    timeout: Duration,
    mut check: F,
) -> Result<()>
where
    F: AsyncFnMut() -> Result<bool>,
{
    let start = Instant::now();
    let mut last_err = None;
    loop {
        proc.check_running()?;
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_err = Some(e),
        }
        if start.elapsed() > timeout {
            bail!(
                "{what}: not ready after {timeout:?} (last error: {}); log {}:\n{}",
                last_err
                    .map(|e| format!("{e:#}"))
                    .unwrap_or_else(|| "none".into()),
                proc.log.display(),
                tail(&proc.log, 30)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
