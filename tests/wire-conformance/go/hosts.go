package main

// The simulated machines: fixed identities and hardware that pass the service's host
// validations, and their inventory built from upstream's models.

import (
	"fmt"
	"net"

	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/models"
)

const (
	gib = int64(1) << 30
	gb  = int64(1_000_000_000)
	nic = "ens3"
)

// hostKind keeps identities of different host groups apart.
type hostKind struct {
	name   string
	tag    int   // UUID/MAC namespace
	ipBase int   // first host offset in the machine network
	cpus   int64 // meets the role's minimum
	memory int64
}

var (
	kindMaster = hostKind{"master", 1, 10, 4, 16 * gib}
	kindWorker = hostKind{"worker", 2, 100, 2, 8 * gib}
	kindSNO    = hostKind{"sno", 3, 200, 8, 16 * gib}
	kindDay2   = hostKind{"day2", 4, 150, 2, 8 * gib}
)

// hostSpec is one machine.
type hostSpec struct {
	id       strfmt.UUID
	hostname string
	kind     hostKind
	ip       net.IP
	prefix   int
	gateway  net.IP
	mac      string
	// failInstall makes its installer report "Failed" (the error and logs path).
	failInstall bool
}

func newHost(k hostKind, i int, network *net.IPNet) (*hostSpec, error) {
	ip, err := nthAddress(network, k.ipBase+i)
	if err != nil {
		return nil, err
	}
	gw, err := nthAddress(network, 1)
	if err != nil {
		return nil, err
	}
	prefix, _ := network.Mask.Size()
	return &hostSpec{
		id:       strfmt.UUID(fmt.Sprintf("%08x-0000-4000-8000-%012x", 0xc0a0000+k.tag, i)),
		hostname: fmt.Sprintf("%s-%d", k.name, i),
		kind:     k,
		ip:       ip,
		prefix:   prefix,
		gateway:  gw,
		mac:      fmt.Sprintf("02:%02x:00:00:00:%02x", k.tag, i),
	}, nil
}

// nthAddress is network + n (IPv4).
func nthAddress(network *net.IPNet, n int) (net.IP, error) {
	base := network.IP.To4()
	if base == nil {
		return nil, fmt.Errorf("%s is not an IPv4 network", network)
	}
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	v += uint32(n)
	ip := net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4()
	if !network.Contains(ip) {
		return nil, fmt.Errorf("address %d is outside %s", n, network)
	}
	return ip, nil
}

func (h *hostSpec) cidr() string { return fmt.Sprintf("%s/%d", h.ip, h.prefix) }

// inventory is what the agent's inventory step reports for this machine.
func (h *hostSpec) inventory() *models.Inventory {
	serial := string(h.id)[24:]
	disk := func(name, path, byID string, size int64, dt models.DriveType, bootable, eligible bool, reasons []string, hctl string) *models.Disk {
		return &models.Disk{
			ID:                  byID,
			Name:                name,
			Path:                path,
			ByID:                byID,
			ByPath:              "/dev/disk/by-path/pci-0000:00:05.0-scsi-" + hctl,
			DriveType:           dt,
			SizeBytes:           size,
			Bootable:            bootable,
			Hctl:                hctl,
			Serial:              serial + "-" + name,
			Model:               "QEMU HARDDISK",
			Vendor:              "QEMU",
			Smart:               "{}",
			IsInstallationMedia: dt == models.DriveTypeODD,
			InstallationEligibility: models.DiskInstallationEligibility{
				Eligible:           eligible,
				NotEligibleReasons: reasons,
			},
		}
	}
	wwn := "0x5000c500" + serial[4:]
	return &models.Inventory{
		Hostname:     h.hostname,
		BmcAddress:   "0.0.0.0",
		BmcV6address: "::/0",
		Interfaces: []*models.Interface{{
			Name:          nic,
			MacAddress:    h.mac,
			IPV4Addresses: []string{h.cidr()},
			IPV6Addresses: []string{},
			Mtu:           1500,
			SpeedMbps:     10000,
			HasCarrier:    true,
			Vendor:        "0x1af4",
			Product:       "0x0001",
			Flags:         []string{"up", "broadcast", "multicast"},
			Type:          "physical",
		}},
		Disks: []*models.Disk{
			disk("sda", "/dev/sda", "/dev/disk/by-id/wwn-"+wwn, 120*gb, models.DriveTypeSSD, false, true, []string{}, "0:0:0:0"),
			// The discovery ISO shows up as an optical drive, as on real hosts.
			disk("sr0", "/dev/sr0", "/dev/disk/by-id/ata-QEMU_DVD-ROM_"+serial, gb, models.DriveTypeODD, true, false,
				[]string{"Drive type is ODD, it must be one of HDD, SSD."}, "0:0:1:0"),
		},
		Boot: &models.Boot{CurrentBootMode: "uefi", PxeInterface: nic},
		SystemVendor: &models.SystemVendor{
			Manufacturer: "Red Hat",
			ProductName:  "KVM",
			SerialNumber: serial,
			Virtual:      true,
		},
		Memory: &models.Memory{
			PhysicalBytes:       h.kind.memory,
			UsableBytes:         h.kind.memory - h.kind.memory/50,
			PhysicalBytesMethod: models.MemoryMethodDmidecode,
		},
		CPU: &models.CPU{
			Count:        h.kind.cpus,
			Frequency:    2100,
			Flags:        []string{"fpu", "vme", "pae", "sse4_2", "avx2", "vmx", "aes", "x2apic"},
			ModelName:    "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz",
			Architecture: "x86_64",
		},
		Gpus: []*models.Gpu{},
		Routes: []*models.Route{{
			Interface:   nic,
			Gateway:     h.gateway.String(),
			Destination: "0.0.0.0",
			Family:      2, // AF_INET
			Metric:      100,
		}},
		TpmVersion: "none",
	}
}
