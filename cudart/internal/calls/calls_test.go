package calls

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTableRows: each row is well formed: a unique name that says its
// library, a result of that library, arguments the call layer can pass.
func TestTableRows(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range All() {
		row := table[c]
		assert.False(t, seen[row.name], "%s twice", row.name)
		seen[row.name] = true
		if strings.HasPrefix(row.name, "cuda") {
			assert.Equal(t, RuntimeLibrary, c.Library(), row.name)
		} else {
			assert.True(t, strings.HasPrefix(row.name, "cu"), row.name)
			assert.Equal(t, DriverLibrary, c.Library(), row.name)
		}
		if row.result != ResultString {
			assert.Equal(t, row.lib == DriverLibrary, row.result == ResultDriver, "%s returns its library's codes", row.name)
		}
		got, err := Lookup(row.name)
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	assert.Len(t, All(), int(Count))
}

func TestLookupListsTheNames(t *testing.T) {
	_, err := Lookup("cudaMallocc")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"cudaMallocc" is not a CUDA function the binding calls`)
	assert.Contains(t, err.Error(), "cudaMalloc, ")
	assert.Contains(t, err.Error(), "cuMemSetAccess")
}

func TestOf(t *testing.T) {
	assert.Equal(t, []Call{CuInit, CuDeviceGet, CuDeviceGetName}, Of("DeviceName"))
	assert.Equal(t, []Call{DeviceGetDefaultMemPool, MemPoolSetAttribute}, Of("SetMemPoolReleaseThreshold"))
	assert.Equal(t, []string{"MemPoolReleaseThreshold", "SetMemPoolReleaseThreshold"}, DeviceGetDefaultMemPool.Methods())
	assert.Empty(t, Of("NoSuchMethod"))
	assert.Empty(t, GetErrorName.Methods())
	assert.Equal(t, "calls.Call(200)", Call(200).String())
	assert.Equal(t, "VirtualMemory", CuMemMap.Capability().String())
	assert.Equal(t, "CUDA driver", CuMemMap.Library().String())
}
