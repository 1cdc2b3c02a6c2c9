package cudart

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
	for _, c := range Calls() {
		row := table[c]
		assert.False(t, seen[row.name], "%s twice", row.name)
		seen[row.name] = true
		assert.LessOrEqual(t, len(row.args), maxArgs, row.name)
		if strings.HasPrefix(row.name, "cuda") {
			assert.Equal(t, RuntimeLibrary, c.Library(), row.name)
		} else {
			assert.True(t, strings.HasPrefix(row.name, "cu"), row.name)
			assert.Equal(t, DriverLibrary, c.Library(), row.name)
		}
		if row.result != resultString {
			assert.Equal(t, row.lib == DriverLibrary, row.result == resultDriver, "%s returns its library's codes", row.name)
		}
		got, err := LookupCall(row.name)
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	assert.Len(t, Calls(), int(numCalls))
}

func TestLookupCallListsTheNames(t *testing.T) {
	_, err := LookupCall("cudaMallocc")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"cudaMallocc" is not a CUDA function the binding calls`)
	assert.Contains(t, err.Error(), "cudaMalloc, ")
	assert.Contains(t, err.Error(), "cuMemSetAccess")
}

func TestCallsOf(t *testing.T) {
	assert.Equal(t, []Call{CallCuInit, CallCuDeviceGet, CallCuDeviceGetName}, CallsOf("DeviceName"))
	assert.Equal(t, []Call{CallDeviceGetDefaultMemPool, CallMemPoolSetAttribute}, CallsOf("SetMemPoolReleaseThreshold"))
	assert.Equal(t, []string{"MemPoolReleaseThreshold", "SetMemPoolReleaseThreshold"}, CallDeviceGetDefaultMemPool.Methods())
	assert.Empty(t, CallsOf("NoSuchMethod"))
	assert.Empty(t, CallGetErrorName.Methods())
	assert.Equal(t, "cudart.Call(200)", Call(200).String())
	assert.Equal(t, "VirtualMemory", CallCuMemMap.Capability().String())
	assert.Equal(t, "CUDA driver", CallCuMemMap.Library().String())
}
