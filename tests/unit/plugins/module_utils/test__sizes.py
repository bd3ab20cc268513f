"""Sizes chosen from constraints, over the size lists the clouds' own libcloud drivers make.

EC2's driver lists its sizes offline (libcloud's instance-type and price data). GCE, Azure and OpenStack list
them through their APIs: their NodeSizes are built here by the drivers' own parsing functions from payloads
shaped like the APIs' answers, so the extra keys the choice reads are the real ones.
"""

import pytest
from libcloud.compute.base import NodeLocation
from libcloud.compute.drivers.azure_arm import AzureNodeDriver
from libcloud.compute.drivers.gce import GCENodeDriver
from libcloud.compute.drivers.openstack import OpenStack_2_NodeDriver
from libcloud.compute.providers import get_driver
from libcloud.pricing import get_pricing

from ansible_collections.tfdist.cluster.plugins.module_utils._libcloud import choose_size
from ansible_collections.tfdist.cluster.plugins.module_utils._provider import TfdistCloudError
from ansible_collections.tfdist.cluster.plugins.module_utils._sizes import check_constraints, memory_mib


@pytest.fixture(scope="module")
def ec2():
    driver = get_driver("ec2")("key", "secret", region="us-east-1")
    return driver, driver.list_sizes()


def ec2_fits(size, cpus=0, memory_mib_=0, gpus=0):
    """An independent reading of libcloud's EC2 data: x86_64 (not Graviton), enough vCPUs, memory, GPUs."""
    extra = size.extra
    return ("Graviton" not in extra.get("physicalProcessor", "") and int(extra["vcpu"]) >= cpus
            and size.ram >= memory_mib_ and int(extra.get("gpu") or 0) >= gpus)


def test_ec2_cpu_and_memory_get_the_cheapest_x86_type_that_has_them(ec2):
    driver, sizes = ec2
    size, reason = choose_size(driver, sizes, {"cpus": 4, "memory": "16g"}, "worker")

    assert ec2_fits(size, 4, 16 * 10 ** 9 / 2 ** 20)
    cheaper = [s for s in sizes if s.price and s.price < size.price and ec2_fits(s, 4, 16 * 10 ** 9 / 2 ** 20)]
    assert cheaper == []
    assert reason.startswith("%s: %s vCPUs, " % (size.id, size.extra["vcpu"]))
    assert "$%g/h: the cheapest of " % size.price in reason
    assert reason.endswith("x86_64 sizes with cpu.count >= 4 and memory.size >= 16g")


def test_ec2_gpu_is_an_nvidia_one_on_x86(ec2):
    driver, sizes = ec2
    size, reason = choose_size(driver, sizes, {"cpus": 4, "memory": "16g", "gpus": 1}, "worker")

    # g4ad (AMD Radeon, no CUDA) and g5g (Graviton) are cheaper in libcloud's data, but no use to TF on x86.
    assert size.id == "g4dn.xlarge"
    assert reason.startswith("g4dn.xlarge: 4 vCPUs, 16 GiB, 1 GPU, $0.526/h: the cheapest of ")


def test_ec2_arm64_image_gets_a_graviton_type(ec2):
    driver, sizes = ec2
    size, reason = choose_size(driver, sizes, {"cpus": 4, "memory": "16g"}, "worker", arch="arm64")
    assert "Graviton" in size.extra["physicalProcessor"]
    assert ", arm64: the cheapest of " in reason


def test_ec2_types_without_a_known_price_rank_last(ec2):
    driver, sizes = ec2
    unpriced = [s for s in sizes if not s.price]
    assert unpriced, "libcloud's data has EC2 types without a price in us-east-1 (m5.xlarge among them)"
    size, reason = choose_size(driver, unpriced, {"cpus": 4}, "worker")
    assert "price unknown: the smallest (no price known) of " in reason
    smallest = min((s for s in unpriced if ec2_fits(s, 4)), key=lambda s: (s.ram, int(s.extra["vcpu"])))
    assert (size.ram, size.extra["vcpu"]) == (smallest.ram, smallest.extra["vcpu"])


def test_ec2_no_type_has_64_gpus_error_names_system_and_constraint(ec2):
    driver, sizes = ec2
    with pytest.raises(TfdistCloudError) as e:
        choose_size(driver, sizes, {"cpus": 4, "gpus": 64}, "cluster.radl: system 'worker'")
    msg = str(e.value)
    assert msg.startswith("cluster.radl: system 'worker': no ec2 size meets cpu.count >= 4 and gpu.count >= 64: ")
    assert "gpu.count >= 64 is more than any of the " in msg and "(the most: 16, p2.16xlarge)" in msg


def test_ec2_constraints_met_one_by_one_but_not_together(ec2):
    driver, sizes = ec2
    with pytest.raises(TfdistCloudError, match=r"worker: no ec2 size meets cpu.count >= 2 and memory.size >= 2000gi "
                                               r"and gpu.count >= 16: 1 of the \d+ x86_64 sizes meet gpu.count >= 16, "
                                               r"but none of them meets all the constraints"):
        choose_size(driver, sizes, {"cpus": 2, "memory": "2000gi", "gpus": 16}, "worker")


def gce_driver():
    """A GCE driver that never connects: _to_node_size only asks it for the zone."""
    driver = GCENodeDriver.__new__(GCENodeDriver)
    driver.ex_get_zone = lambda name: NodeLocation(name, name, "US", driver)
    return driver


def gce_machine_type(name, cpus, memory_mb, accelerators=()):
    """A machineTypes.list item, as the Compute API answers."""
    item = {"kind": "compute#machineType", "id": str(abs(hash(name)) % 10 ** 12), "name": name,
            "description": "%d vCPUs, %d MB RAM" % (cpus, memory_mb), "guestCpus": cpus, "memoryMb": memory_mb,
            "imageSpaceGb": 0, "maximumPersistentDisks": 128, "zone": "us-central1-a",
            "selfLink": "https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a/machineTypes/" + name}
    if accelerators:
        item["accelerators"] = [{"guestAcceleratorType": kind, "guestAcceleratorCount": count}
                                for kind, count in accelerators]
    return item


@pytest.fixture(scope="module")
def gce():
    driver = gce_driver()
    prices = get_pricing("compute", "gce_instances")
    items = [gce_machine_type("e2-standard-2", 2, 8192), gce_machine_type("e2-standard-4", 4, 16384),
             gce_machine_type("n2-standard-4", 4, 16384), gce_machine_type("n2-highmem-4", 4, 32768),
             gce_machine_type("t2a-standard-4", 4, 16384),
             gce_machine_type("g2-standard-4", 4, 16384, [("nvidia-l4", 1)]),
             gce_machine_type("a2-highgpu-2g", 24, 174080, [("nvidia-tesla-a100", 2)])]
    return driver, [driver._to_node_size(item, prices) for item in items]


def test_gce_reads_guest_cpus_and_accelerators(gce):
    driver, sizes = gce
    size, reason = choose_size(driver, sizes, {"cpus": 4, "memory": "16gi"}, "libcloud_nodes.worker")
    assert size.name == "e2-standard-4"  # cheaper than n2 in libcloud's GCE prices; t2a is arm64
    assert reason.startswith("e2-standard-4: 4 vCPUs, 16 GiB, 0 GPUs, $")

    size, reason = choose_size(driver, sizes, {"gpus": 2}, "libcloud_nodes.worker")
    assert size.name == "a2-highgpu-2g" and ", 2 GPUs, " in reason
    size, reason = choose_size(driver, sizes, {"gpus": 1}, "libcloud_nodes.worker")
    assert size.name == "g2-standard-4"


def azure_sizes():
    driver = AzureNodeDriver.__new__(AzureNodeDriver)
    driver.connection = type("Connection", (), {"driver": driver})()
    payload = {"value": [  # GET .../providers/Microsoft.Compute/locations/westeurope/vmSizes
        {"name": name, "numberOfCores": cores, "osDiskSizeInMB": 1047552, "resourceDiskSizeInMB": 32768,
         "memoryInMB": memory, "maxDataDiskCount": 8}
        for name, cores, memory in (("Standard_B2s", 2, 4096), ("Standard_D4s_v5", 4, 16384),
                                    ("Standard_D4ps_v5", 4, 16384), ("Standard_E4s_v5", 4, 32768),
                                    ("Standard_NC4as_T4_v3", 4, 28672))]}
    return driver, [driver._to_node_size(item) for item in payload["value"]]


def test_azure_reads_number_of_cores_and_has_no_prices():
    driver, sizes = azure_sizes()
    size, reason = choose_size(driver, sizes, {"cpus": 4, "memory": "16gi"}, "worker")
    # No prices: the smallest that fits, and never the Arm one (D4ps) for an x86_64 image.
    assert size.name == "Standard_D4s_v5"
    assert reason == ("Standard_D4s_v5: 4 vCPUs, 16 GiB, 0 GPUs, price unknown: the smallest (no price known) "
                      "of 3 x86_64 sizes with cpu.count >= 4 and memory.size >= 16gi")


def test_azure_gpu_constraint_says_the_size_list_does_not_count_gpus():
    driver, sizes = azure_sizes()
    with pytest.raises(TfdistCloudError, match=r"^worker: no azure_arm size meets gpu.count >= 1: gpu.count >= 1 is "
                                               r"more than any of the 3 x86_64 sizes has \(the most: 0, .*\); "
                                               r"1 more do not say"):
        choose_size(driver, sizes, {"gpus": 1}, "worker")


def openstack_sizes():
    driver = object.__new__(OpenStack_2_NodeDriver)  # never connects: _to_sizes only parses
    payload = {"flavors": [  # GET /flavors/detail
        {"id": fid, "name": name, "ram": ram, "disk": 40, "vcpus": vcpus, "swap": "", "rxtx_factor": 1.0,
         "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": False, "os-flavor-access:is_public": True,
         "OS-FLV-WITH-EXT-SPECS:extra_specs": specs}
        for fid, name, ram, vcpus, specs in (
            ("1", "m1.medium", 4096, 2, {}), ("2", "m1.large", 16384, 4, {}), ("3", "m1.xlarge", 32768, 8, {}),
            ("4", "g1.large", 16384, 4, {"pci_passthrough:alias": "a100:1"}),
            ("5", "g2.xlarge", 32768, 8, {"resources:VGPU": "1", "pci_passthrough:alias": "a100:2"}))]}
    return driver, driver._to_sizes(payload)


def test_openstack_reads_vcpus_and_gpus_of_the_extra_specs():
    driver, sizes = openstack_sizes()
    size, reason = choose_size(driver, sizes, {"cpus": 4, "memory": "16gi"}, "worker")
    assert size.name == "m1.large"
    size, reason = choose_size(driver, sizes, {"gpus": 1}, "worker")
    assert size.name == "g1.large" and "4 vCPUs, 16 GiB, 1 GPU, price unknown" in reason
    size, reason = choose_size(driver, sizes, {"gpus": 3}, "worker")
    assert size.name == "g2.xlarge"


@pytest.mark.parametrize("text, mib", [("16g", 16 * 10 ** 9 / 2 ** 20), ("16gi", 16384), ("512M", 512 * 10 ** 6 / 2 ** 20),
                                       ("2048mib", 2048), ("1073741824b", 1024)])
def test_memory_sizes_read_as_radl_reads_them(text, mib):
    assert memory_mib(text) == pytest.approx(mib)


@pytest.mark.parametrize("constraints, message", [
    ({"memory": "16"}, r"libcloud_nodes.worker.memory: '16' is no memory size; write a number and a unit"),
    ({"cpus": -1}, r"libcloud_nodes.worker.cpus: must be a whole number, 0 or more"),
    ({"cpu": 4}, r"libcloud_nodes.worker: unknown key\(s\) cpu; use cpus, memory and gpus"),
])
def test_bad_constraints_name_the_field(constraints, message):
    with pytest.raises(TfdistCloudError, match=message):
        check_constraints(constraints, "libcloud_nodes.worker")
