//! Files the core keeps on disk hold secrets (kubeadmin password, admin kubeconfig, the
//! install-config with the pull secret, host logs): every file it writes is 0600 and every
//! directory it creates 0700, whatever the process umask.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub const FILE_MODE: u32 = 0o600;
pub const DIR_MODE: u32 = 0o700;

/// Creates `path` and its missing parents as 0700 (existing ones are left as they are).
pub async fn create_dir_all(path: &Path) -> std::io::Result<()> {
    tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .await
}

/// Creates (or truncates) a 0600 file.
pub async fn create_file(path: &Path) -> std::io::Result<tokio::fs::File> {
    tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
        .await
}

/// [`create_file`] for blocking code.
pub fn create_file_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Writes a 0600 file.
pub async fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut f = create_file(path).await?;
    f.write_all(bytes).await?;
    f.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn files_and_directories_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir_all(&dir).await.unwrap();
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let f = dir.join("secret");
        write(&f, b"x").await.unwrap();
        assert_eq!(mode(&f), 0o600);
        create_file_blocking(&dir.join("log")).unwrap();
        assert_eq!(mode(&dir.join("log")), 0o600);
    }
}
